/**
 * Why a lane of host tools cannot run here, or null: the tests that need bwrap or a virtual
 * desktop skip with the reason (.ci/run installs every one of them).
 */
import { spawnSync } from "node:child_process";

/** bwrap as the runtime starts it: a new network namespace, its own /dev and /proc. */
export function bwrapMissing(): string | null {
  const probe = spawnSync(
    "bwrap",
    ["--ro-bind", "/", "/", "--unshare-net", "--dev", "/dev", "--proc", "/proc", "true"],
    { encoding: "utf8" },
  );
  if (probe.error) return `bwrap is not installed (${probe.error.message}); .ci/run installs bubblewrap`;
  if (probe.status !== 0) return `bwrap cannot create namespaces here: ${probe.stderr.trim()}`;
  return null;
}

const runs = (argv: string[]) => spawnSync(argv[0] as string, argv.slice(1)).status === 0;

/** What examples/computer-use/desktop-mcp.mjs drives: Xvfb, xdotool and Tk for the example app. */
export function desktopMissing(): string | null {
  if (spawnSync("Xvfb", ["-version"]).error !== undefined) return "no Xvfb (apt-get install xvfb)";
  if (!runs(["xdotool", "--version"])) return "no xdotool (apt-get install xdotool)";
  if (!runs(["/usr/bin/python3", "-c", "import tkinter"]))
    return "no Tk for /usr/bin/python3 (apt-get install python3-tk)";
  return null;
}

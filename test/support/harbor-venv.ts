import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The real harbor package's venv (scripts/setup-harbor.sh makes it on first use). Returns its
 * python, or why it is unavailable; under CI=true an unavailable harbor fails the test run instead
 * of skipping, so CI never passes without having checked against Harbor itself.
 */
export function harborPython(): { python: string; harbor: string; problem: null } | { problem: string } {
  const res = spawnSync("bash", ["scripts/setup-harbor.sh"], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 900_000,
  });
  if (res.status === 0) {
    return {
      python: `${ROOT}.cache/harbor/bin/python`,
      harbor: `${ROOT}.cache/harbor/bin/harbor`,
      problem: null,
    };
  }
  const problem = `harbor could not be installed: ${(res.stderr || res.stdout || String(res.error)).trim().split("\n").pop()}`;
  if (process.env.CI === "true") throw new Error(problem);
  return { problem };
}

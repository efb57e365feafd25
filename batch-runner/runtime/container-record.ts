import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { engineEnv } from "./container-engine.ts";

/**
 * A container outlives a runner killed with SIGKILL (the engine owns it), with whatever the agent
 * left running in it. The runtime records how to remove it in the session root, which no sandbox
 * sees (so an agent cannot forge the command a later runner runs), and the reaper runs it.
 */
const CONTAINER_FILE = "container-rm.json";

/** Written before the container is started, so a crash during `run` leaves the record too. */
export async function recordContainer(sessionRoot: string, removeArgv: string[]): Promise<void> {
  await writeFile(join(sessionRoot, CONTAINER_FILE), JSON.stringify(removeArgv));
}

/** Runs the recorded removal of a dead runner's session, if there is one; never throws. */
export async function removeRecordedContainer(sessionRoot: string): Promise<void> {
  let argv: unknown;
  try {
    argv = JSON.parse(await readFile(join(sessionRoot, CONTAINER_FILE), "utf8"));
  } catch {
    return;
  }
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string")) return;
  const [bin, ...args] = argv as string[];
  await new Promise<void>((resolve) => {
    execFile(bin as string, args, { timeout: 60_000, env: engineEnv() }, () => resolve());
  });
}

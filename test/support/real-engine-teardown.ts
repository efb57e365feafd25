/**
 * Global setup for `vitest run`: one directory per run where test files record the real engines
 * they start (test/support/real-engine.ts); at the end every one of them is stopped, with its
 * process group (vLLM runs its engine core in a child process).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

export default function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "polar-engines-"));
  project.provide("polarEngineDir", dir);
  return async () => {
    const pids = readdirSync(dir)
      .filter((f) => f.endsWith(".pid"))
      .map((f) => Number(readFileSync(join(dir, f), "utf8")));
    for (const pid of pids) signal(pid, "SIGTERM");
    const deadline = Date.now() + 15_000;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    for (const pid of pids) signal(pid, "SIGKILL");
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // Already gone.
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

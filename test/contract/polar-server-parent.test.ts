import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `npx polar view &` then `kill $!`: npm exits without passing SIGTERM on, so the server must notice
 * its parent is gone and stop by itself, freeing its port. Launched with the real `npx`.
 */
const repo = fileURLToPath(new URL("../../", import.meta.url));

let dir: string;
const started: ChildProcess[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-server-parent-"));
});
afterAll(async () => {
  // Whatever survived (the bug) is in the launcher's process group.
  for (const child of started) {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  await rm(dir, { recursive: true, force: true });
});

function launch(args: string[]): { child: ChildProcess; url: Promise<string> } {
  const child = spawn("npx", ["--no-install", "polar", ...args], {
    cwd: repo,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let out = "";
  const url = new Promise<string>((resolve, reject) => {
    const onData = (c: string) => {
      out += c;
      const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]);
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.stderr?.setEncoding("utf8").on("data", onData);
    child.once("exit", (code) => reject(new Error(`npx polar ${args[0]} exited ${code}: ${out}`)));
  });
  return { child, url };
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

describe("a polar server started with npx", () => {
  it.each([
    ["view", () => [dir, "--port", "0"]],
    ["policy", () => ["--port", "0"]],
  ])(
    "polar %s stops once npx is killed",
    async (command, args) => {
      const { child, url } = launch([command, ...args()]);
      const address = await url;
      expect(await answers(address)).toBe(true);
      child.kill("SIGTERM");
      const deadline = Date.now() + 10_000;
      while ((await answers(address)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await answers(address)).toBe(false);
    },
    60_000,
  );
});

import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/**
 * Issue 41, item 15: `npx polar policy --port P &` then `kill $!`. npm does not always pass the
 * signal on, the `sh -c polar ...` it runs in between survives, and the server's parent-pid watch
 * never fired (its parent, `sh`, was alive); a server whose parent died before it started watching
 * never stopped either. Real npx, real `sh -c`, real signals; the server must be gone within a few
 * seconds each time.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const npx = (() => {
  try {
    return execFileSync("sh", ["-c", "command -v npx"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
})();
if (!npx && process.env.CI === "true") throw new Error("server-left-behind: npx is required under CI");
/** util-linux's unshare, for a pid namespace (as root); the case that needs it skips without. */
const unshare = (() => {
  if (process.getuid?.() !== 0) return null;
  try {
    return execFileSync("sh", ["-c", "command -v unshare"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
})();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ports = new Set<number>();

/** Pids (and command lines) of processes whose command line names `policy --port <port>`. */
function serverProcesses(port: number): string[] {
  const out: string[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ");
      if (readFileSync(`/proc/${name}/stat`, "utf8").split(") ")[1]?.startsWith("Z")) continue;
    } catch {
      continue;
    }
    if (cmd.includes(`policy --port ${port}`)) out.push(`${name}: ${cmd.trim()}`);
  }
  return out;
}

async function answers(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** `npx polar policy --port <port>`, as a user's script starts it in the background. */
function startThroughNpx(port: number) {
  ports.add(port);
  const child = spawn(npx as string, ["--no-install", "polar", "policy", "--port", String(port)], {
    cwd: ROOT,
    // The Node that runs this test (24) first, as the README has users set PATH.
    env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  return { child, stderr: () => stderr };
}

async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (await what()) return true;
  return false;
}

// Below Linux's ephemeral range (32768 up): no server another test binds to port 0 can hold it.
const freePort = () => 20_000 + Math.floor(Math.random() * 12_000);

afterAll(() => {
  for (const port of ports) {
    for (const line of serverProcesses(port)) {
      try {
        process.kill(Number(line.split(":")[0]), "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
  }
});

describe.skipIf(!npx)("a polar server started through npx stops with its launcher", () => {
  for (const signal of ["SIGKILL", "SIGHUP"] as const) {
    it(`npx killed with ${signal} (not passed on): the server is gone within 3 s`, async () => {
      const port = freePort();
      const { child, stderr } = startThroughNpx(port);
      expect(await until(() => answers(port), 20_000), stderr()).toBe(true);
      // npm runs `sh -c polar ...`, which runs the server: the chain the old watch missed.
      expect(serverProcesses(port).some((l) => / sh -c /.test(` ${l.split(": ")[1]}`))).toBe(true);
      child.kill(signal);
      const gone = await until(
        async () => serverProcesses(port).length === 0 && !(await answers(port)),
        3_000,
      );
      expect(gone, serverProcesses(port).join("\n")).toBe(true);
      expect(stderr()).toMatch(/polar: stopping: the npm process that launched it \(pid \d+\) is gone/);
    }, 30_000);
  }

  // `CMD ["npx", "polar", ...]` in a container: npm is the namespace's pid 1. The walk up the tree
  // must look at pid 1 too, or it finds no npm and the server stops the moment it is up.
  it.skipIf(!unshare)(
    "npx as pid 1 of its own pid namespace (a container's CMD): the server stays up",
    async () => {
      const port = freePort();
      ports.add(port);
      const child = spawn(
        unshare as string,
        [
          "--pid",
          "--fork",
          "--mount-proc",
          "--kill-child",
          npx as string,
          "--no-install",
          "polar",
          "policy",
          "--port",
          String(port),
        ],
        {
          cwd: ROOT,
          env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` },
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      let stderr = "";
      child.stderr.on("data", (c) => (stderr += c));
      try {
        expect(await until(() => answers(port), 20_000), stderr).toBe(true);
        await sleep(3_000);
        expect(await answers(port), stderr).toBe(true);
        expect(stderr).not.toMatch(/polar: stopping/);
      } finally {
        child.kill("SIGKILL");
      }
    },
    40_000,
  );

  it("npx and its sh gone while the server is still starting (before it could watch): it does not stay", async () => {
    const port = freePort();
    const { child } = startThroughNpx(port);
    // The moment node has been started for the server (npm -> sh -> node), long before it listens.
    let lines: string[] = [];
    const started = await until(() => {
      lines = serverProcesses(port);
      return lines.some((l) => /^\d+: node \S*polar(\.js)? policy --port/.test(l));
    }, 20_000);
    expect(started).toBe(true);
    child.kill("SIGKILL");
    const sh = lines.find((l) => / sh -c /.test(` ${l.split(": ")[1]}`));
    expect(sh).toBeDefined();
    process.kill(Number(sh?.split(":")[0]), "SIGKILL");
    // Orphaned before it started: the old watch saw init as its parent and never fired.
    await until(() => serverProcesses(port).length === 0, 10_000);
    expect(serverProcesses(port)).toEqual([]);
    expect(await answers(port)).toBe(false);
  }, 30_000);
});

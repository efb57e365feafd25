// Start benchmark targets as child processes and wait for the line that says they listen.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";

export interface Child {
  proc: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

// A benchmark stopped by Ctrl-C or a timeout must not leave its targets running: 'exit' handlers
// kill what is still alive, and the signals are turned into an exit so those handlers run.
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const proc of live) proc.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

/** Registers a spawned target so it is killed if the benchmark process exits first. */
export function track(proc: ChildProcess): ChildProcess {
  live.add(proc);
  proc.once("exit", () => live.delete(proc));
  return proc;
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** Spawns `cmd args` and resolves once `ready` returns true for a line of its output (stdout or stderr). */
export async function startChild(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; ready: (line: string) => boolean; timeoutMs?: number },
): Promise<Child> {
  const proc = track(
    spawn(cmd, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${cmd} ${args.join(" ")} did not start:\n${output.join("")}`)),
      opts.timeoutMs ?? 30_000,
    );
    const onData = (buf: Buffer) => {
      const text = buf.toString();
      output.push(text);
      if (text.split("\n").some(opts.ready)) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited with ${code}:\n${output.join("")}`));
    });
  });
  proc.removeAllListeners("exit");
  // Keep draining output so the child never blocks on a full pipe.
  proc.stdout?.resume();
  proc.stderr?.resume();
  return asChild(proc);
}

/** A spawned target with a stop that asks politely (SIGTERM), then insists after 3 s. */
export function asChild(proc: ChildProcess): Child {
  return {
    proc,
    pid: proc.pid ?? -1,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once("exit", () => resolve());
        proc.kill("SIGTERM");
        setTimeout(() => proc.kill("SIGKILL"), 3000).unref();
      }),
  };
}

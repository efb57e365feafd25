import { spawn } from "node:child_process";
import type { LimitHit } from "./limits.ts";
import type { ExecResult } from "./runtime.ts";

export interface SpawnGroupOptions {
  env: Record<string, string>;
  cwd: string;
  timeoutMs?: number;
  stdin?: string;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  signal?: AbortSignal;
  /** Extra cleanup on timeout/abort, after the group is killed (e.g. `docker exec ... kill -9 -1`). */
  onKill?: () => Promise<void> | void;
  /** Keep at most this many characters of each stream (the harness may be chatty). */
  maxOutputChars?: number;
  /** Told the new process group's id (= the leader's pid), e.g. to record it for the orphan reaper. */
  onSpawn?: (pgid: number) => void;
  /** Bytes of stdout and stderr together after which the group is killed (`limit:output`). */
  maxOutputBytes?: number;
  /** Polled while the command runs: a limit the session hit (cgroup, disk) kills the group. */
  limitHit?: () => LimitHit | null;
}

/** How often a running command's session is checked for a hit limit. */
const LIMIT_POLL_MS = 200;

/** Per stream; a stream that reached it was cut (a judge treats such a log as untrustworthy). */
export const MAX_OUTPUT_CHARS = 4 * 1024 * 1024;

/**
 * Runs a host command as the leader of a new process group (detached), so that on timeout or abort the
 * whole tree the harness started (shells, tool calls, servers) dies with `kill(-pgid)`, not just the leader.
 */
export function spawnGroup(argv: string[], opts: SpawnGroupOptions): Promise<ExecResult> {
  const started = Date.now();
  const maxChars = opts.maxOutputChars ?? MAX_OUTPUT_CHARS;
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    let settled = false;
    let limit: LimitHit | null = null;
    let outputBytes = 0;
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    if (child.pid !== undefined) opts.onSpawn?.(child.pid);
    let extraKill: Promise<void> = Promise.resolve();
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
      // Awaited before exec resolves, so teardown never races the engine-side kill.
      if (opts.onKill) extraKill = Promise.resolve(opts.onKill()).catch(() => {});
    };
    const timer =
      opts.timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            killGroup();
          }, opts.timeoutMs)
        : undefined;
    const hitLimit = (hit: LimitHit) => {
      if (limit !== null || settled) return;
      limit = hit;
      killGroup();
    };
    const poll = opts.limitHit
      ? setInterval(() => {
          const hit = opts.limitHit?.();
          if (hit) hitLimit(hit);
        }, LIMIT_POLL_MS)
      : undefined;
    const countOutput = (chunk: Buffer) => {
      outputBytes += chunk.length;
      if (opts.maxOutputBytes !== undefined && outputBytes > opts.maxOutputBytes) hitLimit("output");
    };
    const onAbort = () => killGroup();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) killGroup();

    // Bytes are counted for the output limit, then decoded (a character may span two chunks).
    const outDecoder = new TextDecoder();
    const errDecoder = new TextDecoder();
    child.stdout.on("data", (bytes: Buffer) => {
      if (limit === "output") return;
      countOutput(bytes);
      const chunk = outDecoder.decode(bytes, { stream: true });
      if (stdout.length < maxChars) stdout += chunk;
      opts.onStdout?.(chunk);
    });
    child.stderr.on("data", (bytes: Buffer) => {
      if (limit === "output") return;
      countOutput(bytes);
      const chunk = errDecoder.decode(bytes, { stream: true });
      if (stderr.length < maxChars) stderr += chunk;
      opts.onStderr?.(chunk);
    });
    child.stdin.on("error", () => {});
    child.stdin.end(opts.stdin ?? "");

    const finish = (exitCode: number | null, signal: string | null) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      if (poll) clearInterval(poll);
      opts.signal?.removeEventListener("abort", onAbort);
      // The leader may exit while children it backgrounded live on: they belong to the session too.
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // No process left in the group.
        }
      }
      const durationMs = Date.now() - started;
      // A limit the kernel enforced may have ended the command by itself (an OOM-killed leader).
      if (limit === null) limit = opts.limitHit?.() ?? null;
      void extraKill.then(() => resolve({ exitCode, signal, timedOut, stdout, stderr, durationMs, limit }));
    };
    child.on("error", (err) => {
      stderr += `${err.message}\n`;
      finish(127, null);
    });
    // "close" waits for stdio to drain; a backgrounded grandchild holding the pipes would keep it open,
    // so settle on "exit" and give the pipes a moment to flush.
    child.on("exit", (code, signal) => {
      setTimeout(() => finish(code, signal), 20);
    });
    child.on("close", (code, signal) => finish(code, signal));
  });
}

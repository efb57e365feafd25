import { existsSync } from "node:fs";
import { mkdir, realpath, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { reservedEnvProblem } from "../../shared/schemas/reserved-env.ts";
import type { SessionCgroup } from "./cgroup.ts";
import type { LimitHit, SessionLimits } from "./limits.ts";
import type { ExecOptions, ExecResult, Runtime } from "./runtime.ts";
import { spawnGroup } from "./spawn-group.ts";
import {
  copyPath,
  hostPathOf,
  recordProcessGroup,
  removeSessionDirs,
  type SessionDirs,
} from "./work-dirs.ts";

/** How a backend turns "run argv in the session" into a host command line. */
export interface WrappedCommand {
  argv: string[];
  env: Record<string, string>;
  /** Extra kill step after the host process group is killed (container engines). */
  onKill?: () => Promise<void> | void;
}

/**
 * Shared shape of every backend here: the session's work and home dirs live on the host and appear at
 * the same paths inside the sandbox, so upload/download are host copies and only `exec` differs.
 */
export abstract class HostDirRuntime implements Runtime {
  abstract readonly id: string;
  abstract readonly proxyUrl: string;
  protected abstract readonly dirs: SessionDirs;
  /** Environment every command gets before the session's and the call's own. */
  protected abstract readonly baseEnv: Record<string, string>;
  private stopped = false;
  private readonly running = new Map<AbortController, Promise<ExecResult>>();
  /** The limits this session is held to and the cgroup enforcing them (set by the factory). */
  private limits: SessionLimits = {};
  private cgroup: SessionCgroup | null = null;

  /** Holds every later command to `limits`: a cgroup (memory, pids, cpus) and the runner's output count. */
  holdTo(limits: SessionLimits, cgroup: SessionCgroup | null): this {
    this.limits = limits;
    this.cgroup = cgroup;
    return this;
  }

  get workDir(): string {
    return this.dirs.workDir;
  }

  get homeDir(): string {
    return this.dirs.homeDir;
  }

  protected abstract wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand;

  async exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (this.stopped) throw new Error(`runtime ${this.id} is stopped`);
    if (argv.length === 0) throw new Error("exec: empty argv");
    const cwd = opts.cwd ? hostPathOf(this.dirs, opts.cwd) : this.dirs.workDir;
    const wrapped = this.wrap(argv, cwd, { ...this.baseEnv, ...(opts.env ?? {}) });
    const cgroup = this.cgroup;
    if (cgroup) wrapped.argv = cgroup.enter(wrapped.argv);
    const base = cgroup?.counts();
    const volume = this.dirs.volume;
    const limitHit = (): LimitHit | null =>
      (cgroup && base ? cgroup.hitSince(base) : null) ?? (volume?.full() ? "disk" : null);
    const abort = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, abort.signal]) : abort.signal;
    const pending = spawnGroup(wrapped.argv, {
      env: wrapped.env,
      cwd: this.hostCwd(cwd),
      timeoutMs: opts.timeoutMs,
      stdin: opts.stdin,
      onStdout: opts.onStdout,
      onStderr: opts.onStderr,
      signal,
      onKill: wrapped.onKill,
      onSpawn: (pgid) => recordProcessGroup(this.dirs, pgid),
      maxOutputBytes: this.limits.output_mb !== undefined ? this.limits.output_mb * 1024 * 1024 : undefined,
      limitHit: cgroup || volume ? limitHit : undefined,
    });
    this.running.set(abort, pending);
    try {
      return await pending;
    } finally {
      this.running.delete(abort);
    }
  }

  /** Where the host-side launcher runs (the sandboxed cwd is set by the wrapper). */
  protected hostCwd(cwd: string): string {
    return cwd;
  }

  /**
   * The agent owns the work dir: a component of `dest` may be its symlink to a host path. Refuse to
   * write through one (hidden files would land on the host), and replace whatever is at `dest`.
   */
  async upload(hostPath: string, dest: string): Promise<void> {
    const target = hostPathOf(this.dirs, dest);
    const root = await realpath(this.dirs.root);
    const inside = (p: string) => p === root || p.startsWith(`${root}/`);
    let existing = dirname(target);
    while (!existsSync(existing)) existing = dirname(existing);
    if (!inside(await realpath(existing))) {
      throw new Error(`upload to ${JSON.stringify(dest)} refused: a link in its path leaves the session`);
    }
    await mkdir(dirname(target), { recursive: true });
    if (!inside(await realpath(dirname(target)))) {
      throw new Error(`upload to ${JSON.stringify(dest)} refused: a link in its path leaves the session`);
    }
    await rm(target, { recursive: true, force: true });
    await copyPath(hostPath, target);
  }

  async download(src: string, hostPath: string): Promise<void> {
    await copyPath(hostPathOf(this.dirs, src), hostPath);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // Kill what still runs and wait for it, so teardown never races an exec.
    for (const a of this.running.keys()) a.abort();
    await Promise.allSettled(this.running.values());
    // Whatever left the process group (a double-forked daemon) is still in the session's cgroup.
    try {
      await this.cgroup?.remove();
    } finally {
      await this.teardown();
      await removeSessionDirs(this.dirs);
    }
  }

  /** Backend-specific cleanup before the dirs are removed (bridge, container). */
  protected async teardown(): Promise<void> {}
}

/** The only variables of the runner's own environment a session inherits: none can hold a secret. */
export const INHERITED_ENV = ["PATH", "LANG", "LC_ALL", "TZ"] as const;

/**
 * The clean environment of a session, built from an allowlist: the inherited names above, its own HOME,
 * and the task's env (reserved names are refused when the task is validated and dropped here again).
 */
export function cleanEnv(homeDir: string, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8" };
  for (const name of INHERITED_ENV) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  env.HOME = homeDir;
  for (const [name, value] of Object.entries(extra)) {
    if (reservedEnvProblem(name) === null) env[name] = value;
  }
  return env;
}

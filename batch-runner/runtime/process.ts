import { cleanEnv, HostDirRuntime, type WrappedCommand } from "./host-dir-runtime.ts";
import { hostLimits, sessionCgroup } from "./host-limits.ts";
import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "./runtime.ts";
import { killSessionProcesses, SESSION_MARKER_VAR } from "./session-processes.ts";
import { createSessionDirs, defaultSessionsRoot, type SessionDirs } from "./work-dirs.ts";

/**
 * A plain child process on the host, as the runner's user, in a fresh work dir with a clean
 * environment. No isolation beyond that: it runs only where the operator allows it
 * (`--allow-unsandboxed`, or `polar run` on a machine without bwrap), never for untrusted agents.
 */
export class ProcessRuntime extends HostDirRuntime {
  readonly id: string;
  readonly proxyUrl: string;
  protected readonly dirs: SessionDirs;
  protected readonly baseEnv: Record<string, string>;

  constructor(id: string, dirs: SessionDirs, spec: RuntimeSpecInput) {
    super();
    this.id = id;
    this.dirs = dirs;
    this.proxyUrl = spec.proxyUrl.replace(/\/+$/, "");
    this.baseEnv = { ...cleanEnv(dirs.homeDir, spec.env), [SESSION_MARKER_VAR]: id };
  }

  /** No pid namespace here: what left the process group (setsid) is found by marker and cwd. */
  protected override async teardown(): Promise<void> {
    await killSessionProcesses(this.id, this.dirs.root);
  }

  protected wrap(argv: string[], _cwd: string, env: Record<string, string>): WrappedCommand {
    return { argv, env };
  }
}

export function processRuntimeFactory(opts: { sessionsRoot?: string } = {}): RuntimeFactory {
  return {
    backend: "process",
    async create(spec: RuntimeSpecInput): Promise<Runtime> {
      const limits = hostLimits("process", spec);
      const id = runtimeIdOf(spec.sessionId);
      const dirs = await createSessionDirs(opts.sessionsRoot ?? defaultSessionsRoot(), id);
      const runtime = new ProcessRuntime(id, dirs, spec);
      try {
        return runtime.holdTo(limits, await sessionCgroup(id, limits));
      } catch (err) {
        await runtime.stop();
        throw err;
      }
    },
  };
}

let counter = 0;

/** Unique per creation, so a rerun of a session gets fresh dirs even while an old one is torn down. */
export function runtimeIdOf(sessionId: string): string {
  return `${sessionId}.${process.pid}.${++counter}`;
}

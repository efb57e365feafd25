import { cleanEnv, HostDirRuntime, type WrappedCommand } from "./host-dir-runtime.ts";
import { runtimeIdOf } from "./process.ts";
import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "./runtime.ts";
import {
  bridgedArgv,
  HOST_NODE_DIR,
  type HostBridge,
  SANDBOX_BRIDGE_SCRIPT,
  sandboxProxyUrl,
  startHostBridge,
} from "./socket-bridge.ts";
import { spawnGroup } from "./spawn-group.ts";
import { createSessionDirs, defaultSessionsRoot, existingPaths, type SessionDirs } from "./work-dirs.ts";

export interface ApptainerOptions {
  sessionsRoot?: string;
  /** `apptainer` (or `singularity`, or a stand-in in tests). */
  bin?: string;
  /** `exec`: one container per command; `instance`: one long-lived instance per session. */
  mode?: "exec" | "instance";
  /** Passes `--nv` (NVIDIA GPUs) when the task asks for GPUs. */
  nv?: boolean;
  /** Host paths bound read-only at the same path (e.g. the harness cache). */
  readOnlyBinds?: string[];
}

/**
 * Apptainer with `--containall` and `--net --network none`; the proxy is reached through the same
 * Unix-socket bridge as bwrap. Environment goes in as APPTAINERENV_* (values never appear in argv).
 */
export class ApptainerRuntime extends HostDirRuntime {
  readonly id: string;
  readonly proxyUrl: string;
  protected readonly dirs: SessionDirs;
  protected readonly baseEnv: Record<string, string>;
  private readonly bridge: HostBridge;
  private readonly image: string;
  private readonly bin: string;
  private readonly mode: "exec" | "instance";
  private readonly gpus: boolean;
  private readonly readOnly: string[];

  constructor(
    id: string,
    dirs: SessionDirs,
    spec: RuntimeSpecInput,
    bridge: HostBridge,
    opts: ApptainerOptions,
  ) {
    super();
    if (!spec.image)
      throw new Error("runtime.image is required for the apptainer backend (a .sif or docker:// URI)");
    this.id = id;
    this.dirs = dirs;
    this.bridge = bridge;
    this.image = spec.image;
    this.bin = opts.bin ?? "apptainer";
    this.mode = opts.mode ?? "exec";
    this.gpus = (opts.nv ?? true) && (spec.limits.gpus ?? 0) > 0;
    this.readOnly = existingPaths(opts.readOnlyBinds);
    this.proxyUrl = sandboxProxyUrl(spec.proxyUrl);
    this.baseEnv = cleanEnv(dirs.homeDir, spec.env);
  }

  get instanceName(): string {
    return `polar-${this.id.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
  }

  /** Starts the instance (instance mode only). */
  async start(): Promise<void> {
    if (this.mode !== "instance") return;
    const argv = [this.bin, "instance", "start", ...this.containerFlags(), this.image, this.instanceName];
    const res = await spawnGroup(argv, { env: hostEnv(), cwd: this.dirs.root, timeoutMs: 120_000 });
    if (res.exitCode !== 0)
      throw new Error(`apptainer instance start failed (${res.exitCode}): ${res.stderr.trim()}`);
  }

  containerFlags(): string[] {
    return apptainerFlags({ dirs: this.dirs, gpus: this.gpus, readOnly: this.readOnly });
  }

  protected wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand {
    const target = this.mode === "instance" ? [`instance://${this.instanceName}`] : [this.image];
    const flags = this.mode === "instance" ? [] : this.containerFlags();
    const inner = bridgedArgv(`${HOST_NODE_DIR}/bin/node`, this.bridge.socketPath, argv);
    return {
      argv: [this.bin, "exec", ...flags, "--pwd", cwd, ...target, ...inner],
      env: { ...hostEnv(), ...prefixed(env) },
    };
  }

  protected override async teardown(): Promise<void> {
    if (this.mode === "instance") {
      await spawnGroup([this.bin, "instance", "stop", this.instanceName], {
        env: hostEnv(),
        cwd: "/",
        timeoutMs: 60_000,
      });
    }
    await this.bridge.close();
  }
}

/** Container flags shared by `exec` and `instance start` (exported for the argv unit tests). */
export function apptainerFlags(o: { dirs: SessionDirs; gpus: boolean; readOnly?: string[] }): string[] {
  return [
    "--containall",
    "--net",
    "--network",
    "none",
    "--home",
    o.dirs.homeDir,
    "--bind",
    `${o.dirs.workDir}:${o.dirs.workDir}`,
    "--bind",
    `${o.dirs.runDir}:${o.dirs.runDir}`,
    "--bind",
    `${HOST_NODE_DIR}:${HOST_NODE_DIR}:ro`,
    "--bind",
    `${SANDBOX_BRIDGE_SCRIPT}:${SANDBOX_BRIDGE_SCRIPT}:ro`,
    ...(o.readOnly ?? []).flatMap((p) => ["--bind", `${p}:${p}:ro`]),
    ...(o.gpus ? ["--nv"] : []),
  ];
}

/** What the apptainer CLI itself needs from the runner's environment (not passed into the container). */
function hostEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", LANG: "C.UTF-8" };
}

function prefixed(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) out[`APPTAINERENV_${k}`] = v;
  return out;
}

export function apptainerRuntimeFactory(opts: ApptainerOptions = {}): RuntimeFactory {
  return {
    backend: "apptainer",
    async create(spec: RuntimeSpecInput): Promise<Runtime> {
      const id = runtimeIdOf(spec.sessionId);
      const dirs = await createSessionDirs(opts.sessionsRoot ?? defaultSessionsRoot(), id);
      const bridge = await startHostBridge(dirs.runDir, spec.proxyUrl);
      const runtime = new ApptainerRuntime(id, dirs, spec, bridge, opts);
      try {
        await runtime.start();
      } catch (err) {
        await runtime.stop();
        throw err;
      }
      return runtime;
    },
  };
}

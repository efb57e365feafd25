import {
  BridgedRuntime,
  containerNameOf,
  prepareBridgedSession,
  requireImage,
  startOrStop,
} from "./bridged-runtime.ts";
import type { WrappedCommand } from "./host-dir-runtime.ts";
import { engineLimits } from "./host-limits.ts";
import { refuseBuildImage } from "./image-build-ref.ts";
import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "./runtime.ts";
import { HOST_NODE_DIR, type HostBridge, SANDBOX_BRIDGE_SCRIPT } from "./socket-bridge.ts";
import { spawnGroup } from "./spawn-group.ts";
import type { SessionDirs } from "./work-dirs.ts";

const IMAGE_REQUIRED = "runtime.image is required for the apptainer backend (a .sif or docker:// URI)";

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
export class ApptainerRuntime extends BridgedRuntime {
  private readonly image: string;
  private readonly bin: string;
  private readonly mode: "exec" | "instance";
  private readonly gpus: boolean;
  private readonly engineLimits: RuntimeSpecInput["limits"];

  constructor(
    id: string,
    dirs: SessionDirs,
    spec: RuntimeSpecInput,
    bridge: HostBridge,
    opts: ApptainerOptions,
  ) {
    const image = requireImage(spec, IMAGE_REQUIRED);
    super(id, dirs, spec, bridge, opts.readOnlyBinds);
    this.image = image;
    this.bin = opts.bin ?? "apptainer";
    this.mode = opts.mode ?? "exec";
    this.gpus = (opts.nv ?? true) && (spec.limits.gpus ?? 0) > 0;
    this.engineLimits = spec.limits;
  }

  get instanceName(): string {
    return containerNameOf(this.id);
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
    return apptainerFlags({
      dirs: this.dirs,
      gpus: this.gpus,
      readOnly: this.readOnly,
      limits: this.engineLimits,
    });
  }

  protected wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand {
    const target = this.mode === "instance" ? [`instance://${this.instanceName}`] : [this.image];
    const flags = this.mode === "instance" ? [] : this.containerFlags();
    const inner = this.bridged(argv);
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
    await super.teardown();
  }
}

/** Container flags shared by `exec` and `instance start` (exported for the argv unit tests). */
export function apptainerFlags(o: {
  dirs: SessionDirs;
  gpus: boolean;
  readOnly?: string[];
  limits?: RuntimeSpecInput["limits"];
}): string[] {
  const limits = o.limits ?? {};
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
    // Read-only: the bridge socket only; it is on the host's disk, outside the session's volume.
    `${o.dirs.runDir}:${o.dirs.runDir}:ro`,
    "--bind",
    `${HOST_NODE_DIR}:${HOST_NODE_DIR}:ro`,
    "--bind",
    `${SANDBOX_BRIDGE_SCRIPT}:${SANDBOX_BRIDGE_SCRIPT}:ro`,
    ...(o.readOnly ?? []).flatMap((p) => ["--bind", `${p}:${p}:ro`]),
    ...(o.gpus ? ["--nv"] : []),
    // Apptainer's cgroup flags: it refuses to start where it cannot create a cgroup.
    ...(limits.memory_mb ? ["--memory", `${limits.memory_mb}M`] : []),
    ...(limits.cpus ? ["--cpus", String(limits.cpus)] : []),
    ...(limits.pids ? ["--pids-limit", String(limits.pids)] : []),
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
      requireImage(spec, IMAGE_REQUIRED);
      refuseBuildImage(spec.image, "apptainer");
      const limits = engineLimits("apptainer", spec);
      const { id, dirs, bridge } = await prepareBridgedSession(spec, opts.sessionsRoot, {
        diskMb: limits.disk_mb,
      });
      return startOrStop(
        new ApptainerRuntime(id, dirs, { ...spec, limits }, bridge, opts).holdTo(limits, null),
      );
    },
  };
}

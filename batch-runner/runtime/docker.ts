import {
  BridgedRuntime,
  containerNameOf,
  prepareBridgedSession,
  requireImage,
  startOrStop,
} from "./bridged-runtime.ts";
import type { WrappedCommand } from "./host-dir-runtime.ts";
import { engineLimits } from "./host-limits.ts";
import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "./runtime.ts";
import { HOST_NODE_DIR, type HostBridge, SANDBOX_BRIDGE_SCRIPT } from "./socket-bridge.ts";
import { spawnGroup } from "./spawn-group.ts";
import type { SessionDirs } from "./work-dirs.ts";

const IMAGE_REQUIRED = "runtime.image is required for the docker backend (an image reference)";

export interface DockerOptions {
  sessionsRoot?: string;
  /** `docker`, `podman`, or a stand-in in tests. */
  bin?: string;
  /** Host paths bound read-only at the same path (e.g. the harness cache). */
  readOnlyBinds?: string[];
}

/**
 * A long-lived container per session (`docker run -d ... sleep infinity`), commands via `docker exec`.
 * `--network none`; the proxy is reached through the Unix-socket bridge. Works with podman too.
 */
export class DockerRuntime extends BridgedRuntime {
  private readonly bin: string;
  private readonly spec: RuntimeSpecInput;

  constructor(
    id: string,
    dirs: SessionDirs,
    spec: RuntimeSpecInput,
    bridge: HostBridge,
    opts: DockerOptions,
  ) {
    requireImage(spec, IMAGE_REQUIRED);
    super(id, dirs, spec, bridge, opts.readOnlyBinds);
    this.spec = spec;
    this.bin = opts.bin ?? "docker";
  }

  get containerName(): string {
    return containerNameOf(this.id);
  }

  async start(): Promise<void> {
    const argv = [
      this.bin,
      ...dockerRunArgs({
        name: this.containerName,
        dirs: this.dirs,
        spec: this.spec,
        readOnly: this.readOnly,
      }),
    ];
    const res = await spawnGroup(argv, { env: hostEnv(), cwd: this.dirs.root, timeoutMs: 300_000 });
    if (res.exitCode !== 0) throw new Error(`${this.bin} run failed (${res.exitCode}): ${res.stderr.trim()}`);
  }

  protected wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand {
    // `-e NAME` without a value reads it from the CLI's own environment: values stay out of argv (ps).
    const envFlags = Object.keys(env).flatMap((k) => ["-e", k]);
    const inner = this.bridged(argv);
    return {
      argv: [this.bin, "exec", "-i", "-w", cwd, ...envFlags, this.containerName, ...inner],
      env: { ...hostEnv(), ...env },
      // Killing the CLI does not stop what runs in the container: kill everything there but init.
      onKill: async () => {
        await spawnGroup([this.bin, "exec", this.containerName, "kill", "-9", "-1"], {
          env: hostEnv(),
          cwd: "/",
          timeoutMs: 30_000,
        });
      },
    };
  }

  protected override async teardown(): Promise<void> {
    await spawnGroup([this.bin, "rm", "-f", this.containerName], {
      env: hostEnv(),
      cwd: "/",
      timeoutMs: 60_000,
    });
    await super.teardown();
  }
}

/** `run` argv after the binary name (exported for the argv unit tests). */
export function dockerRunArgs(o: {
  name: string;
  dirs: SessionDirs;
  spec: RuntimeSpecInput;
  readOnly?: string[];
}): string[] {
  const { limits } = o.spec;
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  return [
    "run",
    "-d",
    "--init",
    "--name",
    o.name,
    "--network",
    "none",
    "--user",
    `${uid}:${gid}`,
    "-v",
    `${o.dirs.workDir}:${o.dirs.workDir}`,
    "-v",
    `${o.dirs.homeDir}:${o.dirs.homeDir}`,
    "-v",
    `${o.dirs.runDir}:${o.dirs.runDir}`,
    "-v",
    `${HOST_NODE_DIR}:${HOST_NODE_DIR}:ro`,
    "-v",
    `${SANDBOX_BRIDGE_SCRIPT}:${SANDBOX_BRIDGE_SCRIPT}:ro`,
    ...(o.readOnly ?? []).flatMap((p) => ["-v", `${p}:${p}:ro`]),
    ...(limits.cpus ? ["--cpus", String(limits.cpus)] : []),
    ...(limits.memory_mb ? ["--memory", `${limits.memory_mb}m`] : []),
    ...(limits.gpus ? ["--gpus", String(limits.gpus)] : []),
    ...(limits.pids ? ["--pids-limit", String(limits.pids)] : []),
    "--entrypoint",
    "sleep",
    o.spec.image ?? "",
    "infinity",
  ];
}

function hostEnv(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
  };
  for (const k of ["DOCKER_HOST", "DOCKER_CONFIG", "CONTAINER_HOST", "XDG_RUNTIME_DIR"]) {
    if (process.env[k]) env[k] = process.env[k];
  }
  return env;
}

export function dockerRuntimeFactory(opts: DockerOptions = {}): RuntimeFactory {
  return {
    backend: "docker",
    async create(spec: RuntimeSpecInput): Promise<Runtime> {
      requireImage(spec, IMAGE_REQUIRED);
      const limits = engineLimits("docker", spec, opts.bin);
      const { id, dirs, bridge } = await prepareBridgedSession(spec, opts.sessionsRoot, {
        diskMb: limits.disk_mb,
      });
      return startOrStop(new DockerRuntime(id, dirs, { ...spec, limits }, bridge, opts).holdTo(limits, null));
    },
  };
}

import {
  BridgedRuntime,
  containerNameOf,
  prepareBridgedSession,
  requireImage,
  startOrStop,
} from "./bridged-runtime.ts";
import { type ContainerEngine, engineEnv, resolveContainerEngine } from "./container-engine.ts";
import { recordContainer } from "./container-record.ts";
import type { WrappedCommand } from "./host-dir-runtime.ts";
import { engineLimits } from "./host-limits.ts";
import {
  type BuildOptions,
  type BuiltImage,
  buildImage,
  buildOptionsFromEnv,
  taskImage,
} from "./image-build.ts";
import { buildContextOf, prebuiltImageOf } from "./image-build-ref.ts";
import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "./runtime.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";
import { joinFlags, type ServiceNet, SideServices } from "./side-services.ts";
import {
  BRIDGE_PORT,
  HOST_NODE_DIR,
  type HostBridge,
  JUDGE_BRIDGE_PORT,
  SANDBOX_BRIDGE_SCRIPT,
} from "./socket-bridge.ts";
import { spawnGroup } from "./spawn-group.ts";
import type { SessionDirs } from "./work-dirs.ts";

const IMAGE_REQUIRED = "runtime.image is required for the docker backend (an image reference)";

export interface DockerOptions {
  sessionsRoot?: string;
  /** `docker`, `podman`, or a stand-in in tests; unset: picked by `resolveContainerEngine`. */
  bin?: string;
  /** Host paths bound read-only at the same path (e.g. the harness cache). */
  readOnlyBinds?: string[];
  /** For `build:` images (image-build.ts); unset: from POLAR_BASE_IMAGES and POLAR_BUILD_DIRS. */
  build?: BuildOptions;
}

/**
 * A long-lived container per session (`docker run -d ... sleep infinity`), commands via `docker exec`.
 * `--network none`; the proxy is reached through the Unix-socket bridge. Podman runs it too, with
 * the flags `container-engine.ts` decides for the host.
 */
export class DockerRuntime extends BridgedRuntime {
  private readonly engine: ContainerEngine;
  private readonly spec: RuntimeSpecInput;
  private readonly built: BuiltImage | null;
  /** This session's own side services (started before its container), or null. */
  private readonly services: SideServices | null;
  private readonly buildOpts: BuildOptions | null;
  /** The loopback this container joins: its own services', or (a judge's) the agent's. */
  private net: ServiceNet | null;

  constructor(
    id: string,
    dirs: SessionDirs,
    spec: RuntimeSpecInput,
    bridge: HostBridge,
    opts: DockerOptions & { engine: ContainerEngine; built?: BuiltImage; net?: ServiceNet | null },
  ) {
    requireImage(spec, IMAGE_REQUIRED);
    // A judge on the agent's loopback listens for its own bridge on another port than the agent's.
    super(id, dirs, spec, bridge, opts.readOnlyBinds, opts.net ? JUDGE_BRIDGE_PORT : BRIDGE_PORT);
    this.spec = spec;
    this.engine = opts.engine;
    this.built = opts.built ?? null;
    this.net = opts.net ?? null;
    this.buildOpts = opts.build ?? null;
    this.services = spec.services?.length
      ? new SideServices(opts.engine, containerNameOf(id), spec.services, spec.serviceEnv)
      : null;
  }

  /** The engine's binary and global flags: what every engine command starts with. */
  private get cli(): string[] {
    return [this.engine.bin, ...this.engine.globalFlags];
  }

  get containerName(): string {
    return containerNameOf(this.id);
  }

  /** The side services' loopback (null without services): what a judge sharing them joins. */
  get serviceNet(): ServiceNet | null {
    return this.services ? this.net : null;
  }

  async start(): Promise<void> {
    // With services: on podman, removing their holder removes the agent's container too (it joins it).
    const removal = this.services?.removeArgs() ?? ["rm", "-f"];
    await recordContainer(this.dirs.root, [
      ...this.cli,
      ...(this.engine.kind === "podman" && this.services
        ? removal
        : ["rm", "-f", this.containerName, ...removal.slice(2)]),
    ]);
    if (this.services) {
      // Healthy before the agent's container exists, so before the harness can start.
      this.net = await this.services.start({
        sessionRoot: this.dirs.root,
        holderImage: this.spec.image ?? "",
        build: this.buildOpts ?? buildOptionsFromEnv(),
      });
    }
    const argv = [
      ...this.cli,
      ...dockerRunArgs({
        name: this.containerName,
        dirs: this.dirs,
        spec: this.spec,
        readOnly: this.readOnly,
        engineFlags: this.engine.runFlags,
        imageEntrypoint: this.built !== null,
        net: this.net,
      }),
    ];
    const res = await spawnGroup(argv, { env: engineEnv(), cwd: this.dirs.root, timeoutMs: 300_000 });
    if (res.exitCode !== 0)
      throw new Error(`${this.engine.bin} run failed (${res.exitCode}): ${res.stderr.trim()}`);
    if (this.built?.workdir) await this.seedWorkDir(this.built.workdir);
  }

  /**
   * A built image's WORKDIR holds what its Dockerfile put there for the agent (COPY, RUN); the
   * session's work dir stands in for it, so it starts as a copy of it.
   */
  private async seedWorkDir(imageDir: string): Promise<void> {
    const script = 'if [ -d "$1" ]; then cp -a "$1"/. "$2"/; fi';
    const res = await spawnGroup(
      [...this.cli, "exec", this.containerName, "sh", "-c", script, "sh", imageDir, this.dirs.workDir],
      { env: engineEnv(), cwd: "/", timeoutMs: 300_000 },
    );
    if (res.exitCode !== 0)
      throw new Error(
        `copying the image's WORKDIR ${imageDir} into the work dir failed: ${res.stderr.trim()}`,
      );
  }

  protected wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand {
    // `-e NAME` without a value reads it from the CLI's own environment: values stay out of argv (ps).
    const envFlags = Object.keys(env).flatMap((k) => ["-e", k]);
    const inner = this.bridged(argv);
    return {
      argv: [...this.cli, "exec", "-i", "-w", cwd, ...envFlags, this.containerName, ...inner],
      env: { ...engineEnv(), ...env },
      // Killing the CLI does not stop what runs in the container. `exec kill -9 -1` would also kill
      // the keep-alive `sleep` (init's child under --init), so the container exited and POSTRUN's
      // commands (a TIMEOUT session's evaluator) failed on a real engine. A restart kills every
      // process in it, setsid'd ones included, and brings it back with its files.
      onKill: async () => {
        await spawnGroup([...this.cli, "restart", "-t", "0", this.containerName], {
          env: engineEnv(),
          cwd: "/",
          timeoutMs: 30_000,
        });
      },
    };
  }

  protected override async teardown(): Promise<void> {
    await spawnGroup([...this.cli, "rm", "-f", this.containerName], {
      env: engineEnv(),
      cwd: "/",
      timeoutMs: 60_000,
    });
    if (this.services) {
      sessionNets.delete(this.spec.sessionId);
      await this.services.stop();
    }
    await super.teardown();
  }
}

/** `run` argv after the binary name (exported for the argv unit tests). */
export function dockerRunArgs(o: {
  name: string;
  dirs: SessionDirs;
  spec: RuntimeSpecInput;
  readOnly?: string[];
  /** The engine's own `run` flags for this host (container-engine.ts). */
  engineFlags?: string[];
  /**
   * A built task image keeps its ENTRYPOINT (which may start what the task needs) with
   * `sh -c "sleep infinity"` as its command, as Harbor runs it; any other image runs `sleep`.
   */
  imageEntrypoint?: boolean;
  /** The side services' loopback to join (side-services.ts); else the spec's network, none by default. */
  net?: ServiceNet | null;
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
    // "public" (a judge under --allow-verifier-network): the engine's default network.
    ...(o.net ? joinFlags(o.net) : o.spec.network === "public" ? [] : ["--network", "none"]),
    "--user",
    `${uid}:${gid}`,
    ...(o.engineFlags ?? []),
    "-v",
    `${o.dirs.workDir}:${o.dirs.workDir}`,
    "-v",
    `${o.dirs.homeDir}:${o.dirs.homeDir}`,
    "-v",
    // Read-only: the bridge socket only; it is on the host's disk, outside the session's volume.
    `${o.dirs.runDir}:${o.dirs.runDir}:ro`,
    "-v",
    `${HOST_NODE_DIR}:${HOST_NODE_DIR}:ro`,
    "-v",
    `${SANDBOX_BRIDGE_SCRIPT}:${SANDBOX_BRIDGE_SCRIPT}:ro`,
    ...(o.readOnly ?? []).flatMap((p) => ["-v", `${p}:${p}:ro`]),
    ...(limits.cpus ? ["--cpus", String(limits.cpus)] : []),
    ...(limits.memory_mb ? ["--memory", `${limits.memory_mb}m`] : []),
    ...(limits.gpus ? ["--gpus", String(limits.gpus)] : []),
    ...(limits.pids ? ["--pids-limit", String(limits.pids)] : []),
    ...(o.imageEntrypoint
      ? [o.spec.image ?? "", "sh", "-c", "sleep infinity"]
      : ["--entrypoint", "sleep", o.spec.image ?? "", "infinity"]),
  ];
}

export function dockerRuntimeFactory(opts: DockerOptions = {}): RuntimeFactory {
  // Resolved at the first docker session, once: a runner that never runs one never probes.
  let engine: Promise<ContainerEngine> | undefined;
  let buildOpts: BuildOptions | undefined;
  return {
    backend: "docker",
    async create(input: RuntimeSpecInput): Promise<Runtime> {
      if (!input.services?.length) return createOne(input);
      // A judge sharing these services waits for them (it is prewarmed while they start): settled
      // whatever happens here, so a refused session never leaves its judge waiting.
      const entry = sessionNet(input.sessionId);
      try {
        const runtime = await createOne(input);
        entry.settle(runtime.serviceNet);
        return runtime;
      } catch (err) {
        entry.settle(err as Error);
        throw err;
      }
    },
  };

  async function createOne(input: RuntimeSpecInput): Promise<DockerRuntime> {
    requireImage(input, IMAGE_REQUIRED);
    engine ??= resolveContainerEngine(opts.bin);
    const resolved = await engine;
    const context = buildContextOf(input.image);
    const prebuilt = prebuiltImageOf(input.image);
    let built: BuiltImage | undefined;
    if (context !== null) {
      buildOpts ??= opts.build ?? buildOptionsFromEnv();
      built = await buildImage(resolved, context, buildOpts);
    } else if (prebuilt !== null) {
      buildOpts ??= opts.build ?? buildOptionsFromEnv();
      built = await taskImage(resolved, prebuilt, buildOpts.timeoutMs);
    }
    const spec = built ? { ...input, image: built.ref } : input;
    const net = input.joinServicesOf ? await servicesOf(input.joinServicesOf) : null;
    // Podman's `docker` wrapper is podman too: its limit flags follow podman's rules.
    const limits = engineLimits("docker", spec, resolved.kind === "podman" ? "podman" : resolved.bin);
    const { id, dirs, bridge } = await prepareBridgedSession(spec, opts.sessionsRoot, {
      diskMb: limits.disk_mb,
    });
    const runtime = new DockerRuntime(id, dirs, { ...spec, limits }, bridge, {
      ...opts,
      engine: resolved,
      built,
      net,
      build: buildOpts ?? opts.build ?? buildOptionsFromEnv(),
    });
    return startOrStop(runtime.holdTo(limits, null));
  }
}

/**
 * Side services of live sessions in this runner, by session id: a judge sharing them (Harbor's
 * shared verifier, `joinServicesOf`) joins the agent's loopback and sees the services as the agent
 * left them. The judge's runtime is created first (prewarmed), so it waits for the entry.
 */
const sessionNets = new Map<
  string,
  { promise: Promise<ServiceNet | null>; settle(v: ServiceNet | null | Error): void }
>();
const JOIN_WAIT_MS = 60 * 60_000;

function sessionNet(sessionId: string) {
  let entry = sessionNets.get(sessionId);
  if (!entry) {
    let settle!: (v: ServiceNet | null | Error) => void;
    const promise = new Promise<ServiceNet | null>((resolve, reject) => {
      settle = (v) => (v instanceof Error ? reject(v) : resolve(v));
    });
    promise.catch(() => {});
    entry = { promise, settle };
    sessionNets.set(sessionId, entry);
  }
  return entry;
}

async function servicesOf(sessionId: string): Promise<ServiceNet> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the side services of session ${sessionId} were not started in this runner`)),
      JOIN_WAIT_MS,
    );
  });
  try {
    const net = await Promise.race([sessionNet(sessionId).promise, timeout]).catch((err: Error) => {
      throw new RuntimeSpecRefused(`the judge cannot share the session's side services: ${err.message}`);
    });
    if (net === null) throw new RuntimeSpecRefused(`session ${sessionId} has no side services to share`);
    return net;
  } finally {
    clearTimeout(timer);
  }
}

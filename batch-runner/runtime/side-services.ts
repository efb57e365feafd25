import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SERVICE_DEFAULT_LIMITS, type SideService } from "../../shared/schemas/side-service.ts";
import { type ContainerEngine, engineEnv } from "./container-engine.ts";
import { type BuildOptions, buildImage } from "./image-build.ts";
import { buildContextOf, prebuiltImageOf } from "./image-build-ref.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";
import { redactValues, runnerValues, serviceEnvOf } from "./service-env.ts";
import { spawnGroup } from "./spawn-group.ts";

/**
 * A session's side services (`runtime.services`) on a container engine. No pod and no bridge
 * network: a holder container started with `--network none` owns one network namespace holding
 * only a loopback, and every service, the agent's container and a judge that shares them join it
 * (`--network container:<holder>`). Nothing in it routes anywhere, so the agent reaches the
 * services by name and nothing else; the model proxy stays behind the run dir's socket bridge.
 * Names resolve through a hosts file bound read-only over /etc/hosts (podman refuses `--add-host`
 * on a joined namespace). Each service has its own caps (`SERVICE_DEFAULT_LIMITS` when the task
 * sets none), not a share of the agent's. A service that fails to build, exits, or never becomes
 * healthy refuses the session with its log's tail (ERROR at INIT).
 */
export interface ServiceNet {
  /** The container whose network namespace the session's containers join. */
  holder: string;
  /** Bound over /etc/hosts in every container of the namespace. */
  hostsFile: string;
}

export interface StartedServices {
  net: ServiceNet;
  /** Every container started (services and holder), for `rm -f`. */
  containers: string[];
}

const LOG_TAIL_LINES = 30;
const MAX_HEALTH_WAIT_MS = 15 * 60_000;

/** The `run` flags that put a container on the session's loopback with its service names. */
export function joinFlags(net: ServiceNet): string[] {
  return ["--network", `container:${net.holder}`, "--no-hosts", "-v", `${net.hostsFile}:/etc/hosts:ro`];
}

/** The names every container gets: the holder's and the `--name`s the engine needs. */
export function serviceContainerNames(prefix: string, services: SideService[]): string[] {
  return [`${prefix}-net`, ...services.map((s) => `${prefix}-svc-${s.name}`)];
}

/** Services in an order where each comes after what it depends on; a cycle is refused by name. */
export function startOrder(services: SideService[]): SideService[] {
  const byName = new Map(services.map((s) => [s.name, s]));
  const out: SideService[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (s: SideService, path: string[]): void => {
    if (state.get(s.name) === "done") return;
    if (state.get(s.name) === "visiting")
      throw new RuntimeSpecRefused(
        `runtime.services: a dependency cycle (${[...path, s.name].join(" -> ")})`,
      );
    state.set(s.name, "visiting");
    for (const d of s.depends_on) {
      const dep = byName.get(d);
      if (dep) visit(dep, [...path, s.name]);
    }
    state.set(s.name, "done");
    out.push(s);
  };
  for (const s of services) visit(s, []);
  return out;
}

function tailOf(text: string): string {
  return text.trim().split("\n").slice(-LOG_TAIL_LINES).join("\n");
}

export class SideServices {
  private readonly cli: string[];
  private readonly names: string[];
  private readonly engine: ContainerEngine;
  /** The session's container name; the services' names derive from it. */
  private readonly prefix: string;
  private readonly services: SideService[];
  /** Names of the runner's environment the operator lets services take (`--service-env`). */
  private readonly allowedEnv: readonly string[];
  /** Where each service's env file is written for its `run` (outside every sandbox). */
  private sessionRoot = "";

  constructor(
    engine: ContainerEngine,
    prefix: string,
    services: SideService[],
    allowedEnv: readonly string[] = [],
  ) {
    this.engine = engine;
    this.prefix = prefix;
    this.services = services;
    this.allowedEnv = allowedEnv;
    this.cli = [engine.bin, ...engine.globalFlags];
    this.names = serviceContainerNames(prefix, services);
  }

  /** Every container name this session's services use (recorded for the reaper before any starts). */
  get containers(): string[] {
    return this.names;
  }

  /** The engine's CLI, with only what finds the engine in its environment (never the task's variables). */
  private run(args: string[], timeoutMs = 60_000) {
    return spawnGroup([...this.cli, ...args], { env: engineEnv(), cwd: "/", timeoutMs });
  }

  /**
   * Builds what needs building, starts the holder (from `holderImage`, which has `sleep`: the
   * agent's) and each service in dependency order, and waits for each to be healthy.
   */
  async start(o: { sessionRoot: string; holderImage: string; build: BuildOptions }): Promise<ServiceNet> {
    // Before anything is built or started: a variable the runner may not pass refuses the session.
    for (const s of this.services) serviceEnvOf(s, this.allowedEnv, process.env);
    const images = new Map<string, string>();
    for (const s of this.services) images.set(s.name, await this.imageOf(s, o.build));
    const hostsFile = join(o.sessionRoot, "hosts");
    const hosts = [
      "127.0.0.1 localhost",
      "::1 localhost",
      ...this.services.map((s) => `127.0.0.1 ${s.name}`),
    ];
    await writeFile(hostsFile, `${hosts.join("\n")}\n`);
    const net: ServiceNet = { holder: this.names[0] as string, hostsFile };
    this.sessionRoot = o.sessionRoot;
    const holder = await this.run([
      "run",
      "-d",
      "--name",
      net.holder,
      "--network",
      "none",
      "--no-hosts",
      "-v",
      `${hostsFile}:/etc/hosts:ro`,
      "--pids-limit",
      "8",
      ...this.engine.runFlags,
      "--entrypoint",
      "sleep",
      o.holderImage,
      "infinity",
    ]);
    if (holder.exitCode !== 0)
      throw new Error(`side services: starting the network holder failed: ${holder.stderr.trim()}`);
    const ready = new Map<string, Promise<void>>();
    for (const s of startOrder(this.services)) {
      await Promise.all(s.depends_on.map((d) => ready.get(d)));
      await this.startOne(s, images.get(s.name) as string, net);
      const wait = this.waitReady(s);
      wait.catch(() => {});
      ready.set(s.name, wait);
    }
    await Promise.all(ready.values());
    return net;
  }

  private async imageOf(s: SideService, build: BuildOptions): Promise<string> {
    const context = buildContextOf(s.image);
    try {
      if (context !== null) return (await buildImage(this.engine, context, build)).ref;
    } catch (err) {
      if (err instanceof RuntimeSpecRefused)
        throw new RuntimeSpecRefused(`side service ${s.name}: ${err.message}`);
      throw err;
    }
    return prebuiltImageOf(s.image) ?? s.image;
  }

  private containerOf(s: SideService): string {
    return `${this.prefix}-svc-${s.name}`;
  }

  private async startOne(s: SideService, image: string, net: ServiceNet): Promise<void> {
    const limits = { ...SERVICE_DEFAULT_LIMITS, ...s.limits };
    // Read from the runner's environment only now. The values go in a file only the runner reads
    // (never argv, which `ps` shows), and never into the engine CLI's own environment: a task's
    // variable named CONTAINERS_CONF, DOCKER_HOST or PATH would otherwise steer the engine itself.
    const env = serviceEnvOf(s, this.allowedEnv, process.env);
    const multiline = Object.keys(env).find((k) => /[\r\n\0]/.test(env[k] as string));
    if (multiline !== undefined)
      throw new RuntimeSpecRefused(
        `side service ${s.name}: env ${multiline} holds a line break or NUL, which an env file cannot carry`,
      );
    const envFile = join(this.sessionRoot, `service-${s.name}.env`);
    await writeFile(
      envFile,
      Object.entries(env)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(""),
      { mode: 0o600 },
    );
    const [entry, ...entryArgs] = s.entrypoint ?? [];
    const argv = [
      "run",
      "-d",
      "--name",
      this.containerOf(s),
      ...joinFlags(net),
      "--security-opt",
      "no-new-privileges",
      ...this.engine.runFlags,
      "--memory",
      `${limits.memory_mb}m`,
      "--cpus",
      String(limits.cpus),
      "--pids-limit",
      String(limits.pids),
      // `-e NAME` reads the value from the CLI's environment: values stay out of argv (ps).
      "--env-file",
      envFile,
      ...(s.workdir ? ["-w", s.workdir] : []),
      ...(s.user ? ["--user", s.user] : []),
      ...(entry !== undefined ? ["--entrypoint", entry] : []),
      image,
      ...entryArgs,
      ...(s.command ?? []),
    ];
    const res = await this.run(argv, 300_000).finally(() => rm(envFile, { force: true }));
    if (res.exitCode !== 0)
      throw new RuntimeSpecRefused(
        `side service ${s.name}: ${this.engine.bin} run failed (${res.exitCode}): ${this.redacted(tailOf(res.stderr))}`,
      );
  }

  private async running(s: SideService): Promise<boolean> {
    const res = await this.run(["inspect", "--format", "{{.State.Running}}", this.containerOf(s)]);
    return res.exitCode === 0 && res.stdout.trim() === "true";
  }

  /** Service output bound for a session's `error`, without the values taken from the runner's environment. */
  private redacted(text: string): string {
    return redactValues(text, runnerValues(this.services, this.allowedEnv, process.env));
  }

  private async logTail(s: SideService): Promise<string> {
    const res = await this.run(["logs", "--tail", String(LOG_TAIL_LINES), this.containerOf(s)]);
    return this.redacted(tailOf(`${res.stdout}\n${res.stderr}`) || "(no output)");
  }

  /** Running, and healthy when it has a healthcheck (compose's rules: start_period, then retries). */
  private async waitReady(s: SideService): Promise<void> {
    const h = s.healthcheck;
    const started = Date.now();
    const exited = async () =>
      new RuntimeSpecRefused(
        `side service ${s.name} exited before it was ${h ? "healthy" : "up"}; its log:\n${await this.logTail(s)}`,
      );
    if (!h) {
      if (!(await this.running(s))) throw await exited();
      return;
    }
    const deadline =
      started +
      Math.min(
        MAX_HEALTH_WAIT_MS,
        (h.start_period_seconds + h.retries * (h.interval_seconds + h.timeout_seconds)) * 1000 + 10_000,
      );
    let failures = 0;
    let last = "";
    for (;;) {
      const check = await this.run(
        ["exec", this.containerOf(s), ...h.test],
        Math.max(1000, h.timeout_seconds * 1000),
      );
      if (check.exitCode === 0 && !check.timedOut) return;
      if (!(await this.running(s))) throw await exited();
      last = check.timedOut
        ? `timed out after ${h.timeout_seconds} s`
        : `exited ${check.exitCode}: ${this.redacted(tailOf(`${check.stdout}\n${check.stderr}`)).slice(-500) || "(no output)"}`;
      // Failures in the start period do not count (compose's start_period).
      if (Date.now() - started >= h.start_period_seconds * 1000) failures++;
      if (failures >= h.retries || Date.now() >= deadline)
        throw new RuntimeSpecRefused(
          `side service ${s.name} never became healthy (${failures} of ${h.retries} checks failed after ${Math.round((Date.now() - started) / 1000)} s; healthcheck ${JSON.stringify(h.test)}: ${last}); its log:\n${await this.logTail(s)}`,
        );
      await new Promise((r) => setTimeout(r, h.interval_seconds * 1000));
    }
  }

  /** Removes every service and the holder; idempotent, never throws. */
  async stop(): Promise<void> {
    await this.run(this.removeArgs(), 120_000).catch(() => null);
    // Docker has no --depend: the services first, then the holder they joined.
    if (this.engine.kind === "docker")
      await this.run(["rm", "-f", this.names[0] as string]).catch(() => null);
  }

  /**
   * What removes the services (and anything still joined to their loopback: the agent's container,
   * a judge). Podman refuses to remove a holder others join, even in the same `rm`, unless told
   * `--depend`; it is also what the reaper runs after a crash (container-record.ts).
   */
  removeArgs(): string[] {
    const [holder, ...services] = this.names;
    return this.engine.kind === "podman"
      ? ["rm", "-f", "-t", "0", "--depend", holder as string]
      : ["rm", "-f", ...services, holder as string];
  }
}

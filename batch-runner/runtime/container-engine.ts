import { execFile } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";

/**
 * The engine behind the docker runtime: which binary, and the flags that binary needs on this
 * host. Docker needs none; podman needs some on hosts like the one this is developed on (below).
 * Every podman-specific flag is decided here and nowhere else.
 */
export interface ContainerEngine {
  bin: string;
  kind: "docker" | "podman";
  /** Before the subcommand (`podman --runtime runc run ...`). */
  globalFlags: string[];
  /** Added to `run`. */
  runFlags: string[];
}

/** What decides podman's flags; read from the host by `readHostFacts`, given directly in tests. */
export interface HostFacts {
  uid: number;
  /** CAP_SYS_RESOURCE in the effective set: without it no process may raise a hard rlimit. */
  capSysResource: boolean;
  /** The runner's own hard limits (`/proc/self/limits`); undefined when unlimited or unknown. */
  hardNofile?: number;
  hardNproc?: number;
  /** cgroup v1 with a controller also enabled in the v2 hierarchy (`/sys/fs/cgroup/unified`). */
  hybridCgroupControllers: boolean;
  runcInstalled: boolean;
}

/**
 * Podman 4.3 caps its own RLIMIT_NPROC at 32768 when it starts (seen with strace), so a container
 * cannot be given more than that without CAP_SYS_RESOURCE.
 */
const PODMAN_OWN_NPROC = 32768;

/** Podman's flags for a host: empty on an ordinary root or rootless host. */
export function podmanFlags(facts: HostFacts): { globalFlags: string[]; runFlags: string[] } {
  const globalFlags: string[] = [];
  const runFlags: string[] = [];
  // crun (Debian's default OCI runtime) refuses a hybrid host ("cgroups in hybrid mode not supported,
  // drop all controllers from cgroupv2"); runc runs there and applies the v1 limits.
  if (facts.hybridCgroupControllers && facts.runcInstalled) globalFlags.push("--runtime", "runc");
  // Rootful podman sets nofile and nproc to 1048576 in every container; without CAP_SYS_RESOURCE
  // (a VM or container that drops it) that setrlimit fails and no container starts. The runner's
  // own hard limits are what it can grant.
  if (facts.uid === 0 && !facts.capSysResource) {
    if (facts.hardNofile) runFlags.push("--ulimit", `nofile=${facts.hardNofile}:${facts.hardNofile}`);
    const nproc = Math.min(facts.hardNproc ?? PODMAN_OWN_NPROC, PODMAN_OWN_NPROC);
    runFlags.push("--ulimit", `nproc=${nproc}:${nproc}`);
  }
  return { globalFlags, runFlags };
}

const CAP_SYS_RESOURCE = 24n;

/** Linux facts for `podmanFlags`; anything unreadable counts as the ordinary case. */
export function readHostFacts(): HostFacts {
  const status = readText("/proc/self/status");
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  const limits = readText("/proc/self/limits");
  const hardLimit = (name: string): number | undefined => {
    const m = new RegExp(`^${name}\\s+\\S+\\s+(\\d+)`, "m").exec(limits);
    return m ? Number(m[1]) : undefined;
  };
  return {
    uid: process.getuid?.() ?? -1,
    capSysResource: capEff === undefined || ((BigInt(`0x${capEff}`) >> CAP_SYS_RESOURCE) & 1n) === 1n,
    hardNofile: hardLimit("Max open files"),
    hardNproc: hardLimit("Max processes"),
    hybridCgroupControllers:
      readText("/sys/fs/cgroup/cpu/cpu.shares") !== "" &&
      readText("/sys/fs/cgroup/unified/cgroup.controllers").trim() !== "",
    runcInstalled: onPath("runc"),
  };
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function onPath(name: string): boolean {
  const dirs = (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/usr/bin", "/sbin", "/bin"]);
  return dirs.some((dir) => dir !== "" && executable(`${dir}/${name}`));
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs `bin args`; resolves with stdout, or null when it cannot run or exits non-zero. */
export type Probe = (bin: string, args: string[]) => Promise<string | null>;

const probe: Probe = (bin, args) =>
  new Promise((resolve) => {
    execFile(bin, args, { timeout: 15_000, env: engineEnv() }, (err, out) => resolve(err ? null : out));
  });

/** The environment an engine CLI runs with: what finds the engine, nothing of the runner's secrets. */
export function engineEnv(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
  };
  for (const k of ["DOCKER_HOST", "DOCKER_CONFIG", "CONTAINER_HOST", "XDG_RUNTIME_DIR"]) {
    if (process.env[k]) env[k] = process.env[k];
  }
  return env;
}

/**
 * The binary when none is given (`--docker-bin`): `docker` when a docker engine answers, else
 * `podman` when it runs, else `docker` (whose start error then names the missing daemon). A
 * `docker` client without a daemon (as on the development machine) is not an engine.
 */
export async function pickDockerBin(run: Probe = probe): Promise<string> {
  if ((await run("docker", ["info", "--format", "{{.ServerVersion}}"])) !== null) return "docker";
  if ((await run("podman", ["info", "--format", "{{.Version.Version}}"])) !== null) return "podman";
  return "docker";
}

/**
 * The engine for `bin` (picked when undefined). Podman is recognised by its `--version`, so a
 * `docker` that is podman's compatibility wrapper gets podman's flags too.
 */
export async function resolveContainerEngine(
  bin: string | undefined,
  run: Probe = probe,
  facts: () => HostFacts = readHostFacts,
): Promise<ContainerEngine> {
  const chosen = bin ?? (await pickDockerBin(run));
  const version = (await run(chosen, ["--version"])) ?? "";
  if (!/^podman\b/im.test(version)) return { bin: chosen, kind: "docker", globalFlags: [], runFlags: [] };
  return { bin: chosen, kind: "podman", ...podmanFlags(facts()) };
}

import { existsSync } from "node:fs";
import { basename } from "node:path";
import { cgroupSupport, SessionCgroup } from "./cgroup.ts";
import { diskVolumeSupport } from "./disk-volume.ts";
import { effectiveLimits, type LimitSupport, type SessionLimits } from "./limits.ts";
import { gpuSupport } from "./node-gpus.ts";
import type { RuntimeSpecInput } from "./runtime.ts";

/**
 * What a backend whose commands run as host processes (bwrap, process) can enforce here: memory,
 * pids and cpus through a cgroup, the disk through a size-capped volume (bwrap only: a `process`
 * session can write anywhere its user can, so capping its work dir would bound nothing), output by
 * counting what the runner reads. No GPU is passed into bwrap (`--dev` holds no GPU device).
 *
 * rlimits were weighed for `process` and do not bound a session: RLIMIT_AS is address space per
 * process (Node 24 dies at start under 1 GiB of it; ten processes get ten times it), RLIMIT_NPROC
 * counts every process of the user (and root is exempt), RLIMIT_FSIZE caps one file, not a directory.
 */
export function hostLimitSupport(backend: "bwrap" | "process"): LimitSupport {
  const cg = cgroupSupport();
  return {
    memory_mb: cg.memory_mb,
    pids: cg.pids,
    cpus: cg.cpus,
    disk_mb:
      backend === "bwrap"
        ? diskVolumeSupport()
        : "a process session writes wherever the runner's user can; only a sandbox's work dir can be capped",
    output_mb: true,
    gpus: `${backend} passes no GPU devices (use docker or apptainer)`,
  };
}

/** The session's limits (refusing what cannot be enforced) and its cgroup, before any dir exists. */
export function hostLimits(backend: "bwrap" | "process", spec: RuntimeSpecInput): SessionLimits {
  return effectiveLimits(backend, spec.limits, spec.defaultLimits, hostLimitSupport(backend));
}

export function sessionCgroup(runtimeId: string, limits: SessionLimits): Promise<SessionCgroup | null> {
  return SessionCgroup.create(runtimeId, limits);
}

/**
 * Container engines apply memory, pids, cpus and GPUs with their own flags (their cgroups: the
 * engine refuses to start when it has none; GPUs only up to what the node has, node-gpus.ts); work and home live on the same size-capped volume as
 * bwrap's, bound in (the container's own root layer is not capped), and output is counted here.
 */
export function engineLimits(
  backend: "docker" | "apptainer",
  spec: RuntimeSpecInput,
  engineBin: string = backend,
): SessionLimits {
  const ignored = ignoresLimits(engineBin, {
    root: process.getuid?.() === 0,
    cgroupV2: existsSync("/sys/fs/cgroup/cgroup.controllers"),
  });
  const support: LimitSupport = {
    memory_mb: ignored ?? true,
    pids: ignored ?? true,
    cpus: ignored ?? true,
    gpus: gpuSupport(spec.limits.gpus),
    disk_mb: diskVolumeSupport(),
    output_mb: true,
  };
  // Apptainer's cgroup flags need root or a systemd cgroup v2 user session; without them it will not
  // start, so the runner's memory/pids/cpus defaults would break every session on such a node: only a
  // task's own request gets them.
  const defaults =
    backend === "apptainer"
      ? { disk_mb: spec.defaultLimits?.disk_mb, output_mb: spec.defaultLimits?.output_mb }
      : spec.defaultLimits;
  return effectiveLimits(backend, spec.limits, defaults, support);
}

/** Why an engine would run a container without its limit flags (and only log it), or null. */
export function ignoresLimits(engineBin: string, host: { root: boolean; cgroupV2: boolean }): string | null {
  if (basename(engineBin).startsWith("podman") && !host.root && !host.cgroupV2) {
    return "rootless podman ignores --memory, --cpus and --pids-limit on a cgroup v1 host";
  }
  return null;
}

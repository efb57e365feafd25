/**
 * The runner's defaults, defined once: `startRunner` applies them, `polar runner` shows them in
 * `--help` and uses them as flag defaults, `polar run` (embedded) overrides the two named below.
 */
export const RUNNER_DEFAULTS = {
  /** Concurrent harness runs; INIT and READY default to the same, POSTRUN to half (see `postrunSlots`). */
  run: 4,
  /** Deliveries before a session goes to the dead-letter queue. */
  maxReceives: 5,
  visibilityTimeoutSeconds: 120,
  waitSeconds: 10,
  cancelPollMs: 2000,
  /** On SIGTERM, how long running sessions get to finish. */
  graceSeconds: 60,
  /**
   * Fair share at the proxy, per session, where the task's `agent.proxy_limits` says nothing: calls
   * in flight (above the parallel sub-agents and side calls a harness makes; docs/security.md) and
   * prompt + completion tokens per minute (several times a busy 40k-context agent on a fast engine,
   * far below a runaway loop).
   */
  proxyMaxInFlight: 16,
  proxyTokensPerMinute: 4_000_000,
} as const;

/** POSTRUN (evaluation, upload) is shorter than RUN, so half as many slots keep up. */
export function postrunSlots(run: number): number {
  return Math.max(1, Math.ceil(run / 2));
}

/**
 * `polar run` in one process: an in-memory queue answers at once, so a 1 s poll costs nothing, and a
 * developer watching a local run wants a failing session dead-lettered after 3 tries, not 5.
 */
export const EMBEDDED_RUNNER_DEFAULTS = { maxReceives: 3, waitSeconds: 1 } as const;

/** Share of the node's memory that all running sessions' limits add up to (the rest: runner, proxy, OS). */
const SESSION_MEMORY_SHARE = 0.8;

/**
 * Per-session limits where a task names none, derived from the node so a task that says nothing is
 * still bounded: memory is the node's RAM split between the run slots (at least 1 GiB), processes a share of the
 * kernel's thread limit (at most 4096), output 1 GiB. With `sessionsRoot`, the disk too: half the
 * free space there split between the run slots, at most 20 GiB (`polar runner` only: a volume per
 * session needs root, and `polar run` on a laptop leaves the disk to the task's `disk_mb`).
 */
export function defaultSessionLimits(
  run: number,
  node: { totalMemBytes: number; threadsMax: number; freeDiskBytes?: number },
): { memory_mb: number; pids: number; output_mb: number; disk_mb?: number } {
  const mib = 1024 * 1024;
  const limits: ReturnType<typeof defaultSessionLimits> = {
    // At least 1 GiB: a Node harness alone takes a few hundred MiB.
    memory_mb: Math.max(1024, Math.floor((node.totalMemBytes * SESSION_MEMORY_SHARE) / mib / run)),
    pids: Math.max(256, Math.min(4096, Math.floor(node.threadsMax / (4 * run)))),
    output_mb: 1024,
  };
  if (node.freeDiskBytes !== undefined) {
    limits.disk_mb = Math.max(512, Math.min(20 * 1024, Math.floor(node.freeDiskBytes / 2 / mib / run)));
  }
  return limits;
}

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

import { z } from "zod";

/**
 * A task's `agent.proxy_limits`: what the proxy lets one session of the task take from the
 * engine (docs/security.md, "Fair share at the proxy"). A key left out takes the runner's default
 * (`RUNNER_DEFAULTS` in batch-runner/runner-defaults.ts); the runner puts the result in the session
 * token, so the agent cannot change it.
 */
export const ProxyLimits = z.strictObject({
  /** Calls of one session the proxy has in progress at once (model calls, counts, listings); more are answered 429. */
  max_in_flight: z.number().int().min(1).max(4096).optional(),
  /** Prompt plus completion tokens (the engine's usage; a failed call: its request's size) one session may use per minute. */
  tokens_per_minute: z.number().int().min(1).max(10_000_000_000).optional(),
});
export type ProxyLimits = z.infer<typeof ProxyLimits>;

/** The limits as the session token carries them and the proxy applies them; absent: no limit. */
export interface SessionLimits {
  maxInFlight?: number;
  tokensPerMinute?: number;
}

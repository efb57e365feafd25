import { z } from "zod";

/**
 * `agent.sampling`: sampling the proxy applies over whatever the harness sends (harnesses rarely
 * send any, so the engine's generation-config defaults would apply unseen). Carried in the session
 * token so the proxy stays stateless; see docs/proxy.md "Sampling".
 */
export const AgentSampling = z.strictObject({
  temperature: z.number().min(0).max(100).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  /** -1 (or 0 on some engines) means no top-k. */
  top_k: z.number().int().min(-1).optional(),
  min_p: z.number().min(0).max(1).optional(),
  seed: z.number().int().optional(),
  /** A cap: the harness's own `max_tokens` applies when it is lower. */
  max_tokens: z.number().int().positive().optional(),
  /**
   * vLLM's prefix-cache salt, set on every call: KV blocks computed under another salt (a trainer
   * such as prime-rl salts each policy step) never serve this session's prompts.
   */
  cache_salt: z.string().min(1).max(256).optional(),
});
export type AgentSampling = z.infer<typeof AgentSampling>;

/** The params `agent.sampling` sets outright (max_tokens is a cap, handled apart). */
export const OVERRIDDEN_SAMPLING_PARAMS = [
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "cache_salt",
] as const;

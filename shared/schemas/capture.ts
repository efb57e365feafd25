import { z } from "zod";
import { Id, Logprobs, TokenIds } from "./common.ts";

export const PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "google"] as const;
export const Provider = z.enum(PROVIDERS);
export type Provider = z.infer<typeof Provider>;

/**
 * One upstream model call, as the proxy saw it. In memory token arrays are plain arrays;
 * the stored form (see `capture-codec.ts`) packs them as base64 little-endian Int32/Float32.
 */
export const CaptureRecord = z.object({
  v: z.literal(1),
  capture_id: Id,
  session_id: Id,
  task_id: Id,
  /** Attempt of the session that made this call (a redelivered job reruns as attempt + 1). */
  attempt: z.number().int().nonnegative().default(0),
  started_at: z.string(),
  ended_at: z.string(),
  provider: Provider,
  path: z.string(),
  /** Whether the client asked for a stream (the upstream call itself is never streamed). */
  stream: z.boolean(),
  model_requested: z.string().nullable(),
  model_served: z.string().nullable(),
  /** The client's body as received. */
  request: z.unknown(),
  /** The Chat Completions body sent upstream. */
  chat_request: z.unknown(),
  /** Upstream body with the token arrays removed. */
  response: z.unknown().nullable(),
  /** null when the upstream gave no real ids: such a capture is not trainable. */
  prompt_token_ids: TokenIds.nullable(),
  response_token_ids: TokenIds.nullable(),
  response_logprobs: Logprobs.nullable(),
  finish_reason: z.string().nullable(),
  usage: z
    .object({
      prompt_tokens: z.number().int().nonnegative(),
      completion_tokens: z.number().int().nonnegative(),
      cached_tokens: z.number().int().nonnegative().optional(),
    })
    .nullable(),
  policy_version: z.string().nullable(),
  error: z
    .object({
      status: z.number().int(),
      message: z.string(),
    })
    .nullable(),
});
export type CaptureRecord = z.infer<typeof CaptureRecord>;

import { z } from "zod";
import { ImageRef } from "../images/image-refs.ts";
import { TOKEN_CHANNEL_NAMES } from "../token-channels.ts";
import { Id, Logprobs, TokenIds } from "./common.ts";

export const PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "google"] as const;
export const Provider = z.enum(PROVIDERS);
export type Provider = z.infer<typeof Provider>;

/**
 * What the engine's logprobs mean. vLLM's default is `raw_logprobs` (before temperature and
 * top-k/top-p; `--logprobs-mode` changes it); SGLang's are after temperature
 * (`temperature_scaled`) unless `SGLANG_RETURN_ORIGINAL_LOGPROB` is set. `unknown` when the
 * operator did not say and the engine does not report it.
 */
export const LOGPROBS_MODES = [
  "raw_logprobs",
  "processed_logprobs",
  "raw_logits",
  "processed_logits",
  "temperature_scaled",
  "unknown",
] as const;
export const LogprobsMode = z.enum(LOGPROBS_MODES);
export type LogprobsMode = z.infer<typeof LogprobsMode>;

/** The sampling actually requested upstream for one call, after task-level overrides. */
export const CaptureSampling = z.object({
  /**
   * Sampling params sent upstream (temperature, top_p, top_k, min_p, seed, max_tokens, ...).
   * A param absent here was not sent, so the engine's generation-config default applied.
   */
  params: z.record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.null()])),
  /** Names of the params the task's `agent.sampling` set over what the harness sent. */
  task_overrides: z.array(z.string()).default([]),
  logprobs_mode: LogprobsMode,
});
export type CaptureSampling = z.infer<typeof CaptureSampling>;

export const STREAM_STATUSES = ["complete", "ids_incomplete", "aborted"] as const;
export type StreamStatus = (typeof STREAM_STATUSES)[number];

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
  /** Whether the client asked for a stream (the upstream is streamed too in `live` stream mode). */
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
  /** Policy (weight) version when the call started. */
  policy_version: z.string().nullable(),
  /** Policy version when the answer ended; differs from `policy_version` across a weight update. */
  policy_version_end: z.string().nullable().default(null),
  /**
   * Who named the versions: `engine` (the engine that sampled reported them: vLLM `/weight_info`
   * read before and after the call, SGLang's answer fields), `trainer` (set through the control
   * API, `PUT /v1/policy-version`, for an engine that reports none) or `proxy` (its configured or
   * admin-set version, or the caller's `x-polar-policy-version`); null when there is none. Absent
   * on captures written before the field.
   */
  policy_version_source: z.enum(["engine", "trainer", "proxy"]).nullable().optional(),
  /**
   * Why the versions are not the engine's own although it reports them (its `/weight_info` read
   * timed out or failed before or after the call), or why they are unknown: the versions are then
   * the trainer's or proxy's (`policy_version_source`), or null. Absent when nothing went wrong.
   */
  policy_version_note: z.string().max(2000).nullable().optional(),
  /** Effective sampling and logprob semantics; null on captures written before it existed. */
  sampling: CaptureSampling.nullable().default(null),
  /**
   * The client disabled parallel tool calls: an engine that filters to the first call
   * (vLLM `maybe_filter_parallel_tool_calls`) still returns the ids of every sampled call.
   */
  parallel_tool_calls_disabled: z.boolean().default(false),
  /**
   * Token-in-token-out (docs/tito.md): `spliced` when the prompt was the parent's prompt + sampled
   * ids + the rendered delta, `fallback:<reason>` when it was rendered normally; null when off.
   */
  // Optional rather than defaulted so records built before it existed still type-check; absent = null.
  tito: z.string().nullable().optional(),
  /**
   * What was posted upstream when it was not `chat_request` on `/v1/chat/completions`: a token
   * prompt on one of the engines' token channels (`shared/upstream-request.ts`). The body's id
   * array is left out when it equals `prompt_token_ids`; `upstreamRequestOf` rebuilds the request.
   */
  upstream_request: z
    .object({ token_channel: z.enum(TOKEN_CHANNEL_NAMES), body: z.record(z.string(), z.unknown()) })
    .nullable()
    .optional(),
  /** The capture whose ids a spliced prompt extends (token-in-token-out only). */
  parent_capture_id: z.string().nullable().optional(),
  /**
   * The engine replica that served the call (its base URL as the proxy was configured), so
   * prefix-cache effects can be traced per replica; null when no replica answered and on
   * captures written before routing existed (optional, so records built without it still type).
   */
  replica: z.string().nullable().optional(),
  /**
   * How a live-streamed call ended (docs/proxy.md "Streaming"): `complete`, `ids_incomplete` (the
   * streamed ids do not add up to the engine's completion count, or prompt ids never came) or
   * `aborted` (the client went away, or the upstream stream broke, mid-answer). Only `complete` is
   * trainable. Non-streamed and synthesized calls are `complete`; absent (records from before the
   * field, or built by hand) means `complete`. Optional rather than defaulted so every hand-built
   * record elsewhere still type-checks.
   */
  stream_status: z.enum(STREAM_STATUSES).optional(),
  /**
   * Where the call's inline images were: each is stored once at `blobs/sha256/{sha256}` and a
   * placeholder stands at `path` in `request` or `chat_request` (shared/images/image-refs.ts). The
   * `chat_request` entries, in order, are the images the engine saw. Absent when there were none.
   */
  image_refs: z.array(ImageRef).optional(),
  error: z
    .object({
      status: z.number().int(),
      message: z.string(),
    })
    .nullable(),
});
export type CaptureRecord = z.infer<typeof CaptureRecord>;

import type { EngineName } from "../../shared/engines.ts";
import type { LogprobsMode } from "../../shared/schemas/capture.ts";
import type { ChatMessage, ChatRequest, ChatResponse } from "../chat/types.ts";

export { ENGINES, type EngineName } from "../../shared/engines.ts";

/** The upstream body with token data taken out: one object for the harness, one for the capture. */
export interface EngineReading {
  /** What the codec answers from: engine-only fields gone, logprobs only if the client asked. */
  forClient: ChatResponse;
  /** CaptureRecord.response: the token arrays and per-token logprobs live in their own fields. */
  forCapture: Record<string, unknown>;
  promptTokenIds: number[] | null;
  responseTokenIds: number[] | null;
  /** Aligned to responseTokenIds; null when missing, misaligned or holding a placeholder (never guessed). */
  responseLogprobs: number[] | null;
  /** Weight version the engine says produced the answer (the last one, SGLang), else null. */
  policyVersion: string | null;
  /** Weight version of the first sampled token when the engine reports per-token spans, else null. */
  policyVersionFirst: string | null;
}

/** Adds the flags an engine needs to report token ids, and reads them back. Never re-tokenizes. */
export interface EngineAdapter {
  name: EngineName;
  /** What the engine's logprobs mean by default (an operator flag may say otherwise). */
  defaultLogprobsMode: LogprobsMode;
  /**
   * Whether a streamed answer carries the token ids (vLLM: prompt ids in the first chunk, `token_ids`
   * per chunk), so a client stream can be streamed live; otherwise it is synthesized.
   */
  streamsTokenIds: boolean;
  /** The body sent upstream with the engine's token flags (non-streaming; live streaming sets `stream`). */
  prepareRequest(chat: ChatRequest): ChatRequest;
  /** `raw` is the parsed upstream body, already checked to have a `choices` array. */
  readResponse(raw: Record<string, unknown>, clientAskedLogprobs: boolean): EngineReading;
}

/** Flags the client itself may send on Chat Completions that the proxy sets for the engine. */
export function clientAskedLogprobs(chat: ChatRequest): boolean {
  return chat.logprobs === true;
}

/** Fields common to both engines' request preparation. */
export function baseUpstreamRequest(chat: ChatRequest): ChatRequest {
  const body: ChatRequest = { ...chat, messages: withHistoryReasoningBothWays(chat.messages), stream: false };
  // vLLM rejects stream_options on a non-streaming call; the client's stream is synthesized anyway.
  delete body.stream_options;
  const top = typeof chat.top_logprobs === "number" && chat.logprobs === true ? chat.top_logprobs : 0;
  body.logprobs = true;
  body.top_logprobs = top;
  return body;
}

/**
 * Earlier assistant reasoning under both names: vLLM >= Nov 2025 reads `reasoning`, older vLLM
 * and SGLang's message schema read only `reasoning_content` (a `reasoning` field is dropped), and
 * a template that never sees the reasoning renders a different prompt than the one sampled from.
 */
function withHistoryReasoningBothWays(messages: ChatMessage[]): ChatMessage[] {
  let out: ChatMessage[] | null = null;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as ChatMessage & { reasoning_content?: unknown };
    if (m.role !== "assistant") continue;
    const thought =
      typeof m.reasoning === "string" && m.reasoning !== ""
        ? m.reasoning
        : typeof m.reasoning_content === "string" && m.reasoning_content !== ""
          ? m.reasoning_content
          : null;
    if (thought === null || (m.reasoning === thought && m.reasoning_content === thought)) continue;
    out ??= messages.slice();
    out[i] = { ...m, reasoning: thought, reasoning_content: thought } as ChatMessage;
  }
  return out ?? messages;
}

export function isTokenIdArray(x: unknown): x is number[] {
  if (!Array.isArray(x)) return false;
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) return false;
  }
  return true;
}

/**
 * vLLM writes `-9999.0` where it has no logprob for a sampled token (e.g. the token fell outside
 * what the sampler kept). It is not a probability: a list holding one is treated as missing.
 */
export const PLACEHOLDER_LOGPROB = -9999;

export function isRealLogprob(x: number): boolean {
  return Number.isFinite(x) && x !== PLACEHOLDER_LOGPROB;
}

/** `choices[].logprobs.content[].logprob` as a flat array, or null when any entry lacks a number. */
export function logprobsFromContent(logprobs: unknown): number[] | null {
  if (!isObject(logprobs) || !Array.isArray(logprobs.content)) return null;
  const content = logprobs.content;
  const out = new Array<number>(content.length);
  for (let i = 0; i < content.length; i++) {
    const entry = content[i];
    if (!isObject(entry) || typeof entry.logprob !== "number") return null;
    out[i] = entry.logprob;
  }
  return out;
}

export function isObject(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

/** Root fields no provider shape has: removed before the codec or the capture sees the body. */
const ENGINE_ROOT_FIELDS = ["prompt_token_ids", "prompt_logprobs", "kv_transfer_params", "meta_info"];
const ENGINE_CHOICE_FIELDS = [
  "token_ids",
  "response_token_ids",
  "prompt_token_ids",
  "meta_info",
  "hidden_states",
  "weight_versions",
];
/** Engine extension blocks: never shown to a client; the capture keeps them without the id arrays. */
const CLIENT_HIDDEN_ROOT_FIELDS = ["sglext", "metadata"];

/** Shallow copies without engine fields: the big arrays are dropped by reference, never re-serialized. */
export function stripEngineFields(
  raw: Record<string, unknown>,
  keepLogprobs: boolean,
  forClient = true,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  for (const f of ENGINE_ROOT_FIELDS) delete out[f];
  if (forClient) for (const f of CLIENT_HIDDEN_ROOT_FIELDS) delete out[f];
  else if (isObject(raw.sglext)) {
    const { input_ids: _in, output_ids: _out, ...rest } = raw.sglext;
    out.sglext = rest;
  }
  const choices = Array.isArray(raw.choices) ? raw.choices : [];
  out.choices = choices.map((c) => {
    if (!isObject(c)) return c;
    const copy: Record<string, unknown> = { ...c };
    for (const f of ENGINE_CHOICE_FIELDS) delete copy[f];
    if (!keepLogprobs) delete copy.logprobs;
    return copy;
  });
  return out;
}

/** Logprobs are kept only when they line up one-to-one with the sampled ids and are all real. */
export function alignedOrNull(ids: number[] | null, logprobs: number[] | null): number[] | null {
  if (!ids || !logprobs || logprobs.length !== ids.length) return null;
  for (let i = 0; i < logprobs.length; i++) if (!isRealLogprob(logprobs[i])) return null;
  return logprobs;
}

import type { ChatRequest, ChatResponse } from "../chat/types.ts";
import {
  alignedOrNull,
  baseUpstreamRequest,
  type EngineAdapter,
  type EngineReading,
  isObject,
  isTokenIdArray,
  logprobsFromContent,
  stripEngineFields,
} from "./engine.ts";

/**
 * SGLang's chat completions have reported ids in four layouts over 2026 (docs/engines.md has the
 * matrix); every flag is sent so any release answers with what it has, and every place is read:
 *
 * - `return_token_ids`: per-choice `prompt_token_ids` and `token_ids` (PR #30917), renamed
 *   `response_token_ids` in the newest `serving_chat.py`;
 * - `return_prompt_token_ids`: per-choice `prompt_token_ids` (before #30917);
 * - `return_meta_info`: per-choice `meta_info` with `output_token_logprobs`
 *   (`[logprob, token_id, text]` rows, needs `logprobs`), `weight_version`, `weight_versions`;
 * - `return_input_ids_in_sglext` / `return_output_ids_in_sglext`: response-level
 *   `sglext.input_ids` and `sglext.output_ids` (one list per choice) (PR #34488);
 * - the weight version at `meta_info.weight_version` or `metadata.weight_version` (every
 *   release), with per-token `weight_versions` spans `{version, start, end}` where the release has
 *   them (`meta_info`, `metadata`). `sglext` never carries one (SGLang 0.5.23 `SglExt`).
 *
 * Unknown request fields are ignored by SGLang's pydantic models, so older releases accept the
 * newer flags. Logprobs are after temperature scaling unless `SGLANG_RETURN_ORIGINAL_LOGPROB` is set.
 */
export const SGLANG_ID_FLAGS = {
  return_token_ids: true,
  return_prompt_token_ids: true,
  return_meta_info: true,
  return_input_ids_in_sglext: true,
  return_output_ids_in_sglext: true,
} as const;

export const sglangEngine: EngineAdapter = {
  name: "sglang",
  // Releases that know `return_token_ids` refuse it on a stream (400), and the newest stream ids only
  // once at the end (`sglext`): a client stream is synthesized from a non-streamed call.
  streamsTokenIds: false,
  defaultLogprobsMode: "temperature_scaled",
  prepareRequest(chat: ChatRequest): ChatRequest {
    return { ...baseUpstreamRequest(chat), ...SGLANG_ID_FLAGS };
  },
  readResponse(raw, clientAskedLogprobs): EngineReading {
    const choice = Array.isArray(raw.choices) && isObject(raw.choices[0]) ? raw.choices[0] : {};
    const meta = isObject(choice.meta_info) ? choice.meta_info : isObject(raw.meta_info) ? raw.meta_info : {};
    const ext = isObject(raw.sglext) ? raw.sglext : {};
    const metadata = isObject(raw.metadata) ? raw.metadata : {};
    const fromMeta = metaOutput(meta.output_token_logprobs);
    const extOutput = Array.isArray(ext.output_ids) ? ext.output_ids[0] : undefined;

    const promptTokenIds = firstIds(choice.prompt_token_ids, ext.input_ids, raw.prompt_token_ids);
    const responseTokenIds =
      firstIds(choice.response_token_ids, choice.token_ids, extOutput) ?? fromMeta?.ids ?? null;
    const logprobs = logprobsFromContent(choice.logprobs) ?? fromMeta?.logprobs ?? null;
    const spans = versionSpans(meta.weight_versions) ?? versionSpans(metadata.weight_versions);
    const version =
      versionString(meta.weight_version) ??
      versionString(metadata.weight_version) ??
      (spans ? spans[spans.length - 1] : null);
    return {
      forClient: stripEngineFields(raw, clientAskedLogprobs) as ChatResponse,
      forCapture: stripEngineFields(raw, false, false),
      promptTokenIds,
      responseTokenIds,
      responseLogprobs: alignedOrNull(responseTokenIds, logprobs),
      policyVersion: version,
      policyVersionFirst: spans ? spans[0] : null,
    };
  },
};

function firstIds(...candidates: unknown[]): number[] | null {
  for (const c of candidates) if (isTokenIdArray(c)) return c;
  return null;
}

function versionString(v: unknown): string | null {
  return typeof v === "string" || (typeof v === "number" && Number.isFinite(v)) ? String(v) : null;
}

/** `[{version, start, end}, ...]` -> the versions in token order, or null if not that shape. */
function versionSpans(x: unknown): string[] | null {
  if (!Array.isArray(x) || x.length === 0) return null;
  const out: string[] = [];
  for (const span of x) {
    // `WeightVersionSpan` is array-like in msgspec (`[version, start, end]`), a dict once in meta_info.
    const v = isObject(span)
      ? versionString(span.version)
      : Array.isArray(span)
        ? versionString(span[0])
        : null;
    if (v === null) return null;
    out.push(v);
  }
  return out;
}

/** `[[logprob, token_id, text], ...]` -> ids and logprobs, or null if any entry is not that shape. */
function metaOutput(entries: unknown): { ids: number[]; logprobs: number[] } | null {
  if (!Array.isArray(entries)) return null;
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (const e of entries) {
    if (!Array.isArray(e) || !Number.isInteger(e[1]) || e[1] < 0) return null;
    // A null logprob keeps the id; the NaN makes the whole logprob list count as missing.
    logprobs.push(typeof e[0] === "number" ? e[0] : Number.NaN);
    ids.push(e[1]);
  }
  return { ids, logprobs };
}

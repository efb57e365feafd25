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
 * vLLM (>= 0.10.2): `return_token_ids` puts `prompt_token_ids` at the root and `token_ids` on each
 * choice; `logprobs` gives `choices[].logprobs.content[].logprob`. Options that change exact tokens
 * or drop the ids are taken out of client requests before this (see client-engine-fields.ts).
 * Default logprobs are `raw_logprobs` (before temperature and top-k/top-p) unless the server runs
 * with `--logprobs-mode`.
 */
export const vllmEngine: EngineAdapter = {
  name: "vllm",
  streamsTokenIds: true,
  defaultLogprobsMode: "raw_logprobs",
  prepareRequest(chat: ChatRequest): ChatRequest {
    const body = baseUpstreamRequest(chat);
    body.return_token_ids = true;
    return body;
  },
  readResponse(raw, clientAskedLogprobs): EngineReading {
    const choice = Array.isArray(raw.choices) && isObject(raw.choices[0]) ? raw.choices[0] : {};
    const promptTokenIds = isTokenIdArray(raw.prompt_token_ids) ? raw.prompt_token_ids : null;
    const responseTokenIds = isTokenIdArray(choice.token_ids) ? choice.token_ids : null;
    // Per-token version spans come only from the native generate endpoint (tito/generate-channel.ts).
    const spans = versionSpans(choice.weight_versions);
    return {
      forClient: stripEngineFields(raw, clientAskedLogprobs) as ChatResponse,
      forCapture: stripEngineFields(raw, false, false),
      promptTokenIds,
      responseTokenIds,
      responseLogprobs: alignedOrNull(responseTokenIds, logprobsFromContent(choice.logprobs)),
      policyVersion: spans ? spans[spans.length - 1] : null,
      policyVersionFirst: spans ? spans[0] : null,
    };
  },
};

/** The versions of `[{version, start, end}]` spans in token order, or null when absent or malformed. */
function versionSpans(x: unknown): string[] | null {
  if (!Array.isArray(x) || x.length === 0) return null;
  const out: string[] = [];
  for (const s of x) {
    if (!isObject(s) || typeof s.version !== "string") return null;
    out.push(s.version);
  }
  return out;
}

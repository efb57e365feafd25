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
 * SGLang: recent versions answer `return_token_ids` with per-choice `prompt_token_ids`/`token_ids`;
 * older ones need `return_prompt_token_ids` and report sampled ids only inside
 * `meta_info.output_token_logprobs` (`[[logprob, token_id, ...], ...]`). Both flags are sent so either
 * version answers with ids. `meta_info.weight_version` names the weights that sampled the answer.
 */
export const sglangEngine: EngineAdapter = {
  name: "sglang",
  prepareRequest(chat: ChatRequest): ChatRequest {
    const body = baseUpstreamRequest(chat);
    body.return_token_ids = true;
    body.return_prompt_token_ids = true;
    return body;
  },
  readResponse(raw, clientAskedLogprobs): EngineReading {
    const choice = Array.isArray(raw.choices) && isObject(raw.choices[0]) ? raw.choices[0] : {};
    const meta = isObject(choice.meta_info) ? choice.meta_info : isObject(raw.meta_info) ? raw.meta_info : {};
    const legacy = legacyOutput(meta.output_token_logprobs);

    const promptIds = choice.prompt_token_ids ?? raw.prompt_token_ids;
    const promptTokenIds = isTokenIdArray(promptIds) ? promptIds : null;
    const responseTokenIds = isTokenIdArray(choice.token_ids) ? choice.token_ids : (legacy?.ids ?? null);
    const logprobs = logprobsFromContent(choice.logprobs) ?? legacy?.logprobs ?? null;
    const version = meta.weight_version;
    return {
      forClient: stripEngineFields(raw, clientAskedLogprobs) as ChatResponse,
      forCapture: stripEngineFields(raw, false),
      promptTokenIds,
      responseTokenIds,
      responseLogprobs: alignedOrNull(responseTokenIds, logprobs),
      policyVersion: typeof version === "string" || typeof version === "number" ? String(version) : null,
    };
  },
};

/** `[[logprob, token_id, ...], ...]` -> ids and logprobs, or null if any entry is not that shape. */
function legacyOutput(entries: unknown): { ids: number[]; logprobs: number[] } | null {
  if (!Array.isArray(entries)) return null;
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (const e of entries) {
    if (!Array.isArray(e) || typeof e[0] !== "number" || !Number.isInteger(e[1]) || e[1] < 0) return null;
    logprobs.push(e[0]);
    ids.push(e[1]);
  }
  return { ids, logprobs };
}

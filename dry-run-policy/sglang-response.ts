/**
 * A generation in SGLang's chat completion layouts, field for field as `serving_chat.py`
 * (`_build_chat_response`) and `protocol.py` build them: ids and metadata appear only for the
 * flags the release knows and the request sets; `metadata.weight_version` always.
 */

import type { Qwen3 } from "../shared/node/qwen3/qwen3.ts";
import type { Generation } from "./generate.ts";
import type { ChatCompletionRequest } from "./request-schema.ts";
import { completionId, logprobsFor, type ResponseMeta, toolCallsOf } from "./response.ts";
import type { PolicyShape } from "./shapes.ts";

export type SglangShape = Exclude<PolicyShape, "vllm">;

/** Qwen3's `<|im_end|>`: SGLang reports the matched stop token id. */
const IM_END = 151645;

function usage(gen: Generation) {
  return {
    prompt_tokens: gen.promptIds.length,
    total_tokens: gen.promptIds.length + gen.ids.length,
    completion_tokens: gen.ids.length,
    prompt_tokens_details: gen.cachedTokens === undefined ? null : { cached_tokens: gen.cachedTokens },
    reasoning_tokens: 0,
  };
}

function finish(gen: Generation) {
  const matched = gen.finishReason === "length" ? null : IM_END;
  return { type: gen.finishReason === "length" ? "length" : "stop", matched };
}

/** The tokenizer manager's per-request `meta_info`, as `return_meta_info` exposes it. */
function metaInfo(q: Qwen3, request: ChatCompletionRequest, gen: Generation, weightVersion: string) {
  const meta: Record<string, unknown> = {
    id: completionId(gen).slice("chatcmpl-".length),
    finish_reason: finish(gen),
    prompt_tokens: gen.promptIds.length,
    weight_version: weightVersion,
    total_retractions: 0,
    completion_tokens: gen.ids.length,
    cached_tokens: gen.cachedTokens ?? 0,
  };
  if (request.logprobs) {
    const entries = logprobsFor(q, { ...request, top_logprobs: 0 }, gen.ids, 0);
    meta.output_token_logprobs = gen.ids.map((id, i) => [entries[i].logprob, id, gen.tokenTexts[i]]);
  }
  meta.weight_versions = [{ version: weightVersion, start: 0, end: gen.ids.length }];
  return meta;
}

export function sglangChatCompletionBody(
  q: Qwen3,
  request: ChatCompletionRequest,
  gen: Generation,
  meta: ResponseMeta,
  shape: SglangShape,
  weightVersion: string,
) {
  const toolCalls = toolCallsOf(gen);
  const choice: Record<string, unknown> = {
    index: 0,
    message: {
      role: "assistant",
      // SGLang sends "" rather than null so a client re-tokenizing the history sees the same text.
      content: gen.output.content ?? "",
      reasoning_content: gen.output.reasoning,
      tool_calls: toolCalls.length > 0 ? toolCalls.map((c, i) => ({ ...c, index: i })) : null,
    },
    logprobs: request.logprobs ? { content: logprobsFor(q, request, gen.ids, 0) } : null,
    finish_reason: gen.finishReason,
    matched_stop: gen.finishReason === "length" ? null : IM_END,
  };
  const tokenIds = request.return_token_ids === true && shape !== "sglang-meta-info";
  if (tokenIds || request.return_prompt_token_ids === true) choice.prompt_token_ids = gen.promptIds;
  if (tokenIds) choice[shape === "sglang" ? "response_token_ids" : "token_ids"] = gen.ids;
  if (request.return_meta_info === true) choice.meta_info = metaInfo(q, request, gen, weightVersion);

  const body: Record<string, unknown> = {
    id: completionId(gen),
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [choice],
    usage: usage(gen),
    metadata: { weight_version: weightVersion },
  };
  const ext = sglext(request, gen, shape);
  if (ext) body.sglext = ext;
  return body;
}

/** Response-level ids (PR #34488), only in the newest layout and only when asked. */
function sglext(request: ChatCompletionRequest, gen: Generation, shape: SglangShape) {
  if (shape !== "sglang") return null;
  const ext: Record<string, unknown> = {};
  if (request.return_input_ids_in_sglext === true) ext.input_ids = gen.promptIds;
  if (request.return_output_ids_in_sglext === true) ext.output_ids = [gen.ids];
  // SGLang 0.5.23's sglext has ids, routed experts and token details, never a weight version.
  return Object.keys(ext).length === 0 ? null : ext;
}

/**
 * SGLang's stream: the vLLM-like chunks without vLLM's id fields, reasoning as
 * `reasoning_content`, and the sglext ids once in a final `choices: []` chunk before `[DONE]`.
 */
export function sglangChunks(
  vllmChunks: readonly Record<string, unknown>[],
  request: ChatCompletionRequest,
  gen: Generation,
  shape: SglangShape,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = vllmChunks.map((chunk) => {
    const { prompt_token_ids: _p, ...rest } = chunk;
    const choices = Array.isArray(rest.choices) ? rest.choices : [];
    return {
      ...rest,
      choices: choices.map((c: Record<string, unknown>) => {
        const { token_ids: _t, stop_reason: _s, delta, ...choice } = c;
        const d = { ...(delta as Record<string, unknown>) };
        if ("reasoning" in d) {
          d.reasoning_content = d.reasoning;
          delete d.reasoning;
        }
        return { ...choice, delta: d };
      }),
    };
  });
  const ext = sglext(request, gen, shape);
  if (ext && vllmChunks.length > 0) {
    const { id, created, model } = vllmChunks[0];
    out.push({ id, object: "chat.completion.chunk", created, model, choices: [], sglext: ext });
  }
  return out;
}

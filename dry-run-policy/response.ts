/**
 * A generation in vLLM's non-streaming `chat.completion` shape. Token arrays appear only when
 * asked (`return_token_ids`), logprobs only with `logprobs: true`, as vLLM does.
 */

import type { Qwen3 } from "../shared/node/qwen3/qwen3.ts";
import type { Generation } from "./generate.ts";
import { tokenLogprobs } from "./logprobs.ts";
import type { ChatCompletionRequest } from "./request-schema.ts";

export interface ResponseMeta {
  model: string;
  created: number;
}

export function completionId(gen: Generation): string {
  return `chatcmpl-${gen.digest.slice(0, 32)}`;
}

export function toolCallsOf(gen: Generation) {
  return gen.output.toolCalls.map((call, k) => ({
    id: gen.toolCallIds[k],
    type: "function" as const,
    function: { name: call.name, arguments: call.arguments },
  }));
}

export function logprobsFor(
  q: Qwen3,
  request: ChatCompletionRequest,
  ids: readonly number[],
  firstPosition: number,
) {
  return tokenLogprobs(
    ids,
    firstPosition,
    { tokenText: (id) => q.decode([id]), vocabSize: q.vocabSize },
    { topLogprobs: request.top_logprobs ?? 0, tokensAsIds: request.return_tokens_as_token_ids === true },
  );
}

/** vLLM 0.32's `system_fingerprint`: `vllm-{version}-{build}`, on answers and final stream chunks. */
export const SYSTEM_FINGERPRINT = "vllm-0.32.0-dryrun00";

/**
 * Usage as vLLM 0.32 writes it (test/unit/dry-run-policy-conformance.test.ts): the reasoning
 * parser's count of reasoning tokens always, `prompt_tokens_details` null when there is nothing
 * to say in a JSON answer and left out of a stream's usage chunk.
 */
export function usageOf(gen: Generation, stream = false) {
  const details = gen.cachedTokens === undefined ? null : { cached_tokens: gen.cachedTokens };
  return {
    prompt_tokens: gen.promptIds.length,
    total_tokens: gen.promptIds.length + gen.ids.length,
    completion_tokens: gen.ids.length,
    ...(stream && details === null ? {} : { prompt_tokens_details: details }),
    completion_tokens_details: { reasoning_tokens: reasoningTokens(gen) },
  };
}

/** Tokens whose text lies in the reasoning (vLLM's reasoning parser counts the same span). */
function reasoningTokens(gen: Generation): number {
  const range = gen.output.reasoningRange;
  if (!range) return 0;
  let n = 0;
  let offset = 0;
  for (const text of gen.tokenTexts) {
    const end = offset + text.length;
    if (end > range[0] && offset < range[1]) n++;
    offset = end;
  }
  return n;
}

export function chatCompletionBody(
  q: Qwen3,
  request: ChatCompletionRequest,
  gen: Generation,
  meta: ResponseMeta,
) {
  const withIds = request.return_token_ids === true;
  const toolCalls = toolCallsOf(gen);
  return {
    id: completionId(gen),
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: gen.output.content,
          refusal: null,
          annotations: null,
          audio: null,
          function_call: null,
          // vLLM 0.32 leaves `tool_calls` out of a message that has none.
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          reasoning: gen.output.reasoning,
        },
        logprobs: request.logprobs ? { content: logprobsFor(q, request, gen.ids, 0) } : null,
        finish_reason: gen.finishReason,
        stop_reason: null,
        ...(withIds ? { token_ids: gen.ids } : {}),
        routed_experts: null,
      },
    ],
    service_tier: null,
    system_fingerprint: SYSTEM_FINGERPRINT,
    usage: usageOf(gen),
    prompt_logprobs: null,
    ...(withIds ? { prompt_token_ids: gen.promptIds } : {}),
    prompt_text: null,
    kv_transfer_params: null,
    ec_transfer_params: null,
    metrics: null,
  };
}

/**
 * One "sampling" of the dry-run policy: render and tokenize the prompt like vLLM, plan the
 * scripted turn, tokenize its Qwen3 text as the sampled ids, apply `max_tokens`, and parse
 * what was kept back into reasoning / content / tool calls.
 */
import { createHash } from "node:crypto";
import type { Qwen3 } from "../shared/node/qwen3/qwen3.ts";
import { assistantText, type ParsedAssistantOutput, parseAssistantOutput } from "./assistant-text.ts";
import { PolicyRequestError } from "./errors.ts";
import { planTurn } from "./plan-turn.ts";
import type { ChatCompletionRequest } from "./request-schema.ts";
import { tokenPromptOf } from "./token-prompt.ts";

export interface Generation {
  promptIds: number[];
  /** Sampled ids after truncation; ends with `<|im_end|>` unless cut by `max_tokens`. */
  ids: number[];
  /** Text of each sampled id as vLLM streams it (special tokens skipped, split UTF-8 held back). */
  tokenTexts: string[];
  /** `tool_calls` when a complete call was sampled, as vLLM reports with a tool parser. */
  finishReason: "stop" | "length" | "tool_calls";
  output: ParsedAssistantOutput;
  toolCallIds: string[];
  /** Prompt tokens found in the prefix cache; undefined when the server models no cache. */
  cachedTokens?: number;
  /** Stable per conversation (messages + tools), so streamed and plain answers share ids (handy for fixtures). */
  digest: string;
}

/** vLLM's default for Qwen3 is to think unless `chat_template_kwargs.enable_thinking` is false. */
export function thinkingEnabled(request: Pick<ChatCompletionRequest, "chat_template_kwargs">): boolean {
  return request.chat_template_kwargs?.enable_thinking !== false;
}

export function renderPrompt(q: Qwen3, request: ChatCompletionRequest): string {
  return q.renderChat(request.messages, {
    tools: request.tools,
    addGenerationPrompt: true,
    templateKwargs: { enable_thinking: true, ...request.chat_template_kwargs },
  });
}

/** Splits ids into per-token text the way an incremental detokenizer does. */
export function streamTexts(q: Qwen3, ids: readonly number[]): string[] {
  const decoder = new TextDecoder("utf-8");
  return ids.map((id) => (q.isSpecial(id) ? "" : decoder.decode(q.tokenBytes(id), { stream: true })));
}

function checkLength(promptLength: number, maxTokens: number | undefined, maxModelLen: number): void {
  if (promptLength >= maxModelLen) {
    throw new PolicyRequestError(
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has ` +
        `${promptLength} input tokens. Please reduce the length of the input messages.`,
      { param: "messages" },
    );
  }
  if (maxTokens !== undefined && promptLength + maxTokens > maxModelLen) {
    throw new PolicyRequestError(
      `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context ` +
        `length is ${maxModelLen} tokens and your request has ${promptLength} input tokens ` +
        `(${maxTokens} > ${maxModelLen} - ${promptLength}).`,
      { param: "max_tokens" },
    );
  }
}

/** `sessionId`: the proxy's session header, which picks the script alternative (plan-turn.ts). */
export function generate(
  q: Qwen3,
  request: ChatCompletionRequest,
  maxModelLen: number,
  sessionId?: string,
): Generation {
  if ((request.top_logprobs ?? 0) > 0 && !request.logprobs) {
    throw new PolicyRequestError("when using `top_logprobs`, `logprobs` must be set to true.", {
      param: "top_logprobs",
    });
  }
  const promptIds = tokenPromptOf(request, q.vocabSize)?.ids ?? q.encode(renderPrompt(q, request));
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
  checkLength(promptIds.length, maxTokens, maxModelLen);

  const turn = planTurn({
    messages: request.messages,
    tools: request.tools,
    toolChoice: request.tool_choice,
    sessionId,
  });
  const text = assistantText(turn, {
    toJson: q.toJson,
    thinking: thinkingEnabled(request),
    endToken: "<|im_end|>",
  });
  const sampled = q.encode(text);
  const budget = Math.min(maxTokens ?? Number.POSITIVE_INFINITY, maxModelLen - promptIds.length);
  const ids = sampled.length > budget ? sampled.slice(0, budget) : sampled;
  const tokenTexts = streamTexts(q, ids);
  const output = parseAssistantOutput(tokenTexts.join(""), q.toJson);
  const finishReason =
    ids.length < sampled.length ? "length" : output.toolCalls.length > 0 ? "tool_calls" : "stop";
  const digest = createHash("sha256")
    .update(JSON.stringify([request.messages, request.tools ?? null]))
    .digest("hex");
  const toolCallIds = output.toolCalls.map(
    (_, k) => `chatcmpl-tool-${createHash("sha256").update(`${digest}:${k}`).digest("hex").slice(0, 32)}`,
  );
  return { promptIds, ids, tokenTexts, finishReason, output, toolCallIds, digest };
}

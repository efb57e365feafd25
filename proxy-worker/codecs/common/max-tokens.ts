import type { ChatMessage, ChatTool } from "../../chat/types.ts";

/** Tokens kept free beyond the prompt estimate (template tokens, estimate error). */
export const MAX_TOKENS_SAFETY_MARGIN = 256;
/** Per-image guess: vision encoders spend hundreds to a few thousand tokens per image. */
const IMAGE_TOKEN_GUESS = 1024;
/** Dense text (code, CJK) runs near 3 characters per token; overestimating only shortens output. */
const CHARS_PER_TOKEN = 3;

/** A cheap, deliberately high estimate of the prompt's tokens, without a tokenizer. */
export function estimatePromptTokens(messages: ChatMessage[], tools: ChatTool[] | undefined): number {
  let chars = 0;
  let images = 0;
  for (const message of messages) {
    chars += 8;
    if (typeof message.content === "string") chars += message.content.length;
    else if (Array.isArray(message.content)) {
      for (const part of message.content) {
        if (part.type === "text") chars += part.text.length;
        else images += 1;
      }
    }
    if (message.reasoning) chars += message.reasoning.length;
    for (const call of message.tool_calls ?? [])
      chars += call.function.name.length + call.function.arguments.length;
  }
  if (tools) chars += JSON.stringify(tools).length;
  return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKEN_GUESS;
}

/**
 * Harnesses ask for more output than small context windows hold (Claude Code asks 128000), and
 * vLLM rejects prompt + max_tokens > max_model_len. Rule: without a known limit, pass the request
 * through; with one, cap at `maxModelLen - promptEstimate - margin`, but never below
 * `min(1024, maxModelLen / 4)` so that an overestimated prompt cannot starve the answer.
 */
export function clampMaxTokens(
  requested: number | undefined,
  maxModelLen: number | undefined,
  promptEstimate: number,
): number | undefined {
  if (requested === undefined || maxModelLen === undefined || maxModelLen <= 0) return requested;
  const room = maxModelLen - promptEstimate - MAX_TOKENS_SAFETY_MARGIN;
  const floor = Math.min(1024, Math.floor(maxModelLen / 4));
  return Math.max(1, Math.min(requested, Math.max(room, floor)));
}

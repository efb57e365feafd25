import { z } from "zod";
import { CodecError } from "../codec.ts";
import { describeZodError } from "../common/zod-issue.ts";
import { buildChatPrompt, parseAnthropicRequest } from "./convert-request.ts";

/**
 * `/v1/messages/count_tokens` -> the engine's `/tokenize` body. The prompt is built by the same code
 * as a real request (system merge, billing header dropped, tools), so the count matches what a
 * request would cost. Claude Code's context accounting depends on it: never answer 0.
 */
export function countTokensToTokenizeBody(body: unknown): Record<string, unknown> {
  const request = parseAnthropicRequest(body);
  const { messages, tools } = buildChatPrompt(request);
  const out: Record<string, unknown> = { model: request.model, messages, add_generation_prompt: true };
  if (tools) out.tools = tools;
  if (request.thinking) out.chat_template_kwargs = { enable_thinking: request.thinking.type !== "disabled" };
  return out;
}

const TokenizeResponse = z.looseObject({ count: z.number().int().nonnegative() });

/** The engine's `/tokenize` answer as Anthropic's `{input_tokens}`; a malformed answer is a 502. */
export function encodeCountTokens(tokenizeResponse: unknown): { input_tokens: number } {
  const parsed = TokenizeResponse.safeParse(tokenizeResponse);
  if (!parsed.success) {
    throw new CodecError(502, `upstream /tokenize answer: ${describeZodError(parsed.error).message}`);
  }
  return { input_tokens: parsed.data.count };
}

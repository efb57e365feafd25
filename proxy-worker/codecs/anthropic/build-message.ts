import type { ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { derivedId } from "../common/derived-id.ts";
import { parseJsonObject } from "../common/parse-json-object.ts";
import { firstChoice, upstreamReasoning, upstreamText } from "../common/upstream-message.ts";
import { type AnthropicStopReason, mapStopReason } from "./map-stop-reason.ts";
import { toToolUseId } from "./tool-use-id.ts";

export type AnthropicContentBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface AnthropicMessageBody {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/**
 * Anthropic counts cached prompt tokens apart from `input_tokens` (the three add up to the prompt),
 * and Claude Code sums them for its context meter, so cached tokens move, they are not duplicated.
 */
export function mapUsage(chat: ChatResponse): AnthropicUsage {
  const prompt = chat.usage?.prompt_tokens ?? 0;
  const cached = Math.min(prompt, chat.usage?.prompt_tokens_details?.cached_tokens ?? 0);
  return {
    input_tokens: prompt - cached,
    output_tokens: chat.usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/**
 * Blocks in Anthropic's order: thinking (with a signature: Claude Code sends thinking back only
 * when it has one), text, tool_use. Empty text is dropped. Ids derive from the upstream chat id.
 */
export function buildMessage(chat: ChatResponse, ctx: EncodeContext): AnthropicMessageBody {
  const choice = firstChoice(chat);
  const content: AnthropicContentBlock[] = [];
  const reasoning = upstreamReasoning(choice);
  if (reasoning.length > 0) {
    content.push({
      type: "thinking",
      thinking: reasoning,
      signature: derivedId("sig_", chat.id, "thinking"),
    });
  }
  const text = upstreamText(choice);
  if (text.length > 0) content.push({ type: "text", text });
  const seen = new Set<string>();
  (choice.message.tool_calls ?? []).forEach((call, index) => {
    let id = toToolUseId(call.id, chat.id, index);
    // Parallel calls must have distinct ids or the results cannot be told apart.
    if (seen.has(id)) id = toToolUseId(undefined, chat.id, index);
    seen.add(id);
    content.push({
      type: "tool_use",
      id,
      name: call.function?.name ?? "",
      input: parseJsonObject(call.function?.arguments),
    });
  });
  return {
    id: derivedId("msg_", chat.id),
    type: "message",
    role: "assistant",
    model: ctx.decoded.model,
    content,
    ...mapStopReason(choice),
    usage: mapUsage(chat),
  };
}

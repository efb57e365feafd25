import type { ChatChoice, ChatResponse, ChatToolCall } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { upstreamReasoning } from "../common/upstream-message.ts";
import { upstreamToolCalls } from "../common/upstream-tool-calls.ts";
import type { ChatCodecState } from "./convert-request.ts";
import { mapChatFinishReason } from "./map-finish-reason.ts";

/** Reasoning text of an upstream choice, whichever field the engine version used. */
export function choiceReasoning(choice: ChatChoice): string | undefined {
  return upstreamReasoning(choice) || undefined;
}

export function choiceToolCalls(chat: ChatResponse, choice: ChatChoice): ChatToolCall[] {
  return upstreamToolCalls(choice, `call_${chat.id}_${choice.index}`);
}

export function chatState(ctx: EncodeContext): ChatCodecState {
  const state = ctx.decoded.state as Partial<ChatCodecState> | undefined;
  return { logprobs: state?.logprobs === true, includeUsage: state?.includeUsage === true };
}

/** Usage with only the fields OpenAI defines (engines add their own). */
export function encodeUsage(chat: ChatResponse): Record<string, unknown> | undefined {
  const usage = chat.usage;
  if (!usage) return undefined;
  const out: Record<string, unknown> = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === "number") out.prompt_tokens_details = { cached_tokens: cached };
  const details = (usage as { completion_tokens_details?: { reasoning_tokens?: unknown } | null })
    .completion_tokens_details;
  if (typeof details?.reasoning_tokens === "number") {
    out.completion_tokens_details = { reasoning_tokens: details.reasoning_tokens };
  }
  return out;
}

/**
 * The client's `chat.completion`, rebuilt from an allow-list rather than by deleting engine
 * fields: token ids, prompt logprobs, kv_transfer_params or whatever a new engine adds never leak.
 * Reasoning goes out as both `reasoning` and `reasoning_content` (clients read one or the other;
 * the AI SDK, Qwen Code and Pi take the first they find, so nothing is doubled).
 */
export function encodeChatResponse(chat: ChatResponse, ctx: EncodeContext): Record<string, unknown> {
  const state = chatState(ctx);
  const choices = (chat.choices ?? []).map((choice) => {
    const toolCalls = choiceToolCalls(chat, choice);
    const reasoning = choiceReasoning(choice);
    const message: Record<string, unknown> = { role: "assistant", content: choice.message.content ?? null };
    if (reasoning !== undefined) {
      message.reasoning = reasoning;
      message.reasoning_content = reasoning;
    }
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    return {
      index: choice.index,
      message,
      logprobs: state.logprobs ? (choice.logprobs ?? null) : null,
      finish_reason: mapChatFinishReason(choice.finish_reason, toolCalls.length > 0),
    };
  });
  const out: Record<string, unknown> = {
    id: chat.id,
    object: "chat.completion",
    created: ctx.now,
    model: ctx.decoded.model,
    choices,
  };
  const usage = encodeUsage(chat);
  if (usage) out.usage = usage;
  return out;
}

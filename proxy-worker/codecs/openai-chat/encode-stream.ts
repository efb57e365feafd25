import type { ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { sseFrame } from "../common/sse-frame.ts";
import { chatState, choiceReasoning, choiceToolCalls, encodeUsage } from "./encode-response.ts";
import { mapChatFinishReason } from "./map-finish-reason.ts";

/**
 * The `chat.completion.chunk` stream a real server would have sent for this answer, synthesized
 * from the complete upstream response. Per choice: a role chunk, reasoning, content, one chunk per
 * tool call whose first (and only) delta carries `id`, `type` and `function.name` (the AI SDK throws
 * otherwise), then the finish chunk. A usage chunk with `choices: []` follows when the client asked
 * via `stream_options.include_usage`, then `[DONE]`.
 */
export function encodeChatStream(chat: ChatResponse, ctx: EncodeContext): string[] {
  const state = chatState(ctx);
  const base = { id: chat.id, object: "chat.completion.chunk", created: ctx.now, model: ctx.decoded.model };
  const frames: string[] = [];
  const chunk = (index: number, delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    frames.push(
      sseFrame({ ...base, choices: [{ index, delta, logprobs: null, finish_reason: null, ...extra }] }),
    );

  for (const choice of chat.choices ?? []) {
    const index = choice.index;
    chunk(index, { role: "assistant", content: "" });
    const reasoning = choiceReasoning(choice);
    if (reasoning !== undefined) chunk(index, { reasoning, reasoning_content: reasoning });
    const content = choice.message.content;
    const logprobs = state.logprobs ? (choice.logprobs ?? null) : null;
    if (typeof content === "string" && content !== "") chunk(index, { content }, { logprobs });
    const toolCalls = choiceToolCalls(chat, choice);
    toolCalls.forEach((call, position) => {
      chunk(index, {
        tool_calls: [
          {
            index: position,
            id: call.id,
            type: "function",
            function: { name: call.function.name, arguments: call.function.arguments },
          },
        ],
      });
    });
    chunk(index, {}, { finish_reason: mapChatFinishReason(choice.finish_reason, toolCalls.length > 0) });
  }
  if (state.includeUsage) {
    const usage = encodeUsage(chat) ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    frames.push(sseFrame({ ...base, choices: [], usage }));
  }
  frames.push(sseFrame("[DONE]"));
  return frames;
}

import type { ChatFinishReason } from "../../chat/types.ts";

/**
 * The finish reason an OpenAI client understands. vLLM can answer `abort` or null (a stream cut
 * short) and some tool parsers leave `stop` on a message that does carry tool calls; clients such
 * as the AI SDK then mis-label the step, so the reason is derived from what the message holds.
 */
export function mapChatFinishReason(reason: ChatFinishReason | null, hasToolCalls: boolean): string {
  if (reason === "length" || reason === "content_filter") return reason;
  // `tool_calls` without any parsed call would send clients looking for calls that are not there.
  return hasToolCalls ? "tool_calls" : "stop";
}

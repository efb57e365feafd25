import type { ChatChoice } from "../../chat/types.ts";

export type AnthropicStopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal";

/**
 * The chat finish reason as Anthropic's stop_reason. vLLM reports a matched stop string in
 * `stop_reason` (a number there is a stop token id, which is an ordinary end of turn). Some tool
 * parsers finish `stop` although they produced calls (named tool_choice): that is still `tool_use`,
 * or Claude Code would not run the calls.
 */
export function mapStopReason(choice: ChatChoice): {
  stop_reason: AnthropicStopReason;
  stop_sequence: string | null;
} {
  const hasCalls = (choice.message.tool_calls?.length ?? 0) > 0;
  switch (choice.finish_reason) {
    case "length":
      return { stop_reason: "max_tokens", stop_sequence: null };
    case "content_filter":
      return { stop_reason: "refusal", stop_sequence: null };
    case "tool_calls":
      return { stop_reason: "tool_use", stop_sequence: null };
    default:
      if (hasCalls) return { stop_reason: "tool_use", stop_sequence: null };
      if (typeof choice.stop_reason === "string" && choice.stop_reason.length > 0) {
        return { stop_reason: "stop_sequence", stop_sequence: choice.stop_reason };
      }
      return { stop_reason: "end_turn", stop_sequence: null };
  }
}

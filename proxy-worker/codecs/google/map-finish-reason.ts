import type { ChatFinishReason } from "../../chat/types.ts";

/** Chat finish reason -> Gemini finishReason. Gemini ends tool calls with STOP too. */
export function mapFinishReason(reason: ChatFinishReason | null): string {
  switch (reason) {
    case null:
    case "stop":
    case "tool_calls":
      return "STOP";
    case "length":
      return "MAX_TOKENS";
    case "content_filter":
      return "SAFETY";
    default:
      return "OTHER";
  }
}

import type { ChatMessage } from "../../chat/types.ts";

/** What a tool call without a result gets, so the prompt still renders (chat templates expect pairs). */
export const MISSING_TOOL_RESULT = "[no result: the client sent none for this tool call]";

/**
 * Chat templates (and vLLM's validation for some models) need every assistant tool call answered by
 * exactly one tool message right after it. Harness histories break this when a run was interrupted
 * or compacted: a missing result gets a placeholder, a repeated result for one id is dropped.
 */
export function pairToolResults(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let i = 0;
  while (i < messages.length) {
    const message = messages[i];
    out.push(message);
    i += 1;
    if (message.role !== "assistant" || !message.tool_calls?.length) continue;
    const answered = new Set<string>();
    while (i < messages.length && messages[i].role === "tool") {
      const result = messages[i];
      const id = result.tool_call_id ?? "";
      if (!answered.has(id)) {
        answered.add(id);
        out.push(result);
      }
      i += 1;
    }
    for (const call of message.tool_calls) {
      if (!answered.has(call.id)) {
        answered.add(call.id);
        out.push({ role: "tool", tool_call_id: call.id, content: MISSING_TOOL_RESULT });
      }
    }
  }
  return out;
}

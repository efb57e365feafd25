import type { ChatChoice, ChatToolCall } from "../../chat/types.ts";

/**
 * The tool calls of an upstream choice that a client can act on. Engines differ (SGLang may send
 * `arguments` as an object, a broken parser may leave `function` out); a malformed call must not
 * turn a captured answer into a 500, so objects are serialized, unnamed calls dropped, and a
 * missing id replaced by one derived from the position.
 */
export function upstreamToolCalls(choice: ChatChoice, fallbackIdPrefix: string): ChatToolCall[] {
  const calls = (choice.message as { tool_calls?: unknown }).tool_calls;
  if (!Array.isArray(calls)) return [];
  const out: ChatToolCall[] = [];
  calls.forEach((raw: unknown, index) => {
    if (!raw || typeof raw !== "object") return;
    const call = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } | null };
    const name = call.function?.name;
    if (typeof name !== "string" || name === "") return;
    const args = call.function?.arguments;
    out.push({
      id: typeof call.id === "string" && call.id !== "" ? call.id : `${fallbackIdPrefix}_${index}`,
      type: "function",
      function: {
        name,
        arguments:
          typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args),
      },
    });
  });
  return out;
}

import type { ChatTool, ChatToolChoice } from "../../chat/types.ts";
import type { AnthropicTool, AnthropicToolChoice } from "./request-schema.ts";

/**
 * Client tools become function tools. Server tools (`web_search_20250305`, `code_execution`, ...)
 * have no `input_schema`: the engine cannot run them, so they are dropped.
 */
export function convertTools(tools: AnthropicTool[] | undefined): ChatTool[] {
  const out: ChatTool[] = [];
  for (const tool of tools ?? []) {
    if (!tool.input_schema) continue;
    const fn: ChatTool["function"] = { name: tool.name, parameters: tool.input_schema };
    if (tool.description !== undefined) fn.description = tool.description;
    out.push({ type: "function", function: fn });
  }
  return out;
}

/** Undefined when the choice names a tool that was dropped: the engine would reject it. */
export function convertToolChoice(
  choice: AnthropicToolChoice | undefined,
  tools: ChatTool[],
): ChatToolChoice | undefined {
  if (!choice || tools.length === 0) return undefined;
  switch (choice.type) {
    case "auto":
      return "auto";
    case "any":
      return "required";
    case "none":
      return "none";
    case "tool":
      return choice.name && tools.some((tool) => tool.function.name === choice.name)
        ? { type: "function", function: { name: choice.name } }
        : undefined;
  }
}

import { z } from "zod";

/**
 * Responses `namespace` tools (Codex 0.169 offers each MCP server's tools this way: `mcp__notes`
 * holding `write_note`) group function and custom tools under one name; a call of one names both
 * (`{type:"function_call", namespace:"mcp__notes", name:"write_note"}`). Chat Completions has no
 * grouping, so each inner tool goes to the engine as one function named `<namespace>__<name>`,
 * the name Codex itself gave MCP tools before namespaces (`mcp__notes__write_note`).
 */
export const NAMESPACE_SEPARATOR = "__";

export function flatToolName(namespace: string, name: string): string {
  return `${namespace}${NAMESPACE_SEPARATOR}${name}`;
}

/** A flattened tool and the two names it answers to; kept in the codec state for the answer. */
export interface NamespacedTool {
  flat: string;
  namespace: string;
  name: string;
}

export const NamespaceTool = z.looseObject({
  type: z.literal("namespace"),
  name: z.string().min(1),
  description: z.string().nullish(),
  // Each inner tool is checked as a top-level function or custom tool would be.
  tools: z.array(z.looseObject({ type: z.enum(["function", "custom"]) })),
});

/** The namespace and inner name of `flat`, when the request offered it inside a namespace. */
export function namespacedTool(
  tools: readonly NamespacedTool[] | undefined,
  flat: string,
): NamespacedTool | undefined {
  return tools?.find((tool) => tool.flat === flat);
}

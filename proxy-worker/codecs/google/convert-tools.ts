import type { ChatTool, ChatToolChoice } from "../../chat/types.ts";
import { toJsonSchema } from "./json-schema.ts";
import type { GoogleTool, GoogleToolConfig } from "./request-schema.ts";

const EMPTY_PARAMETERS = { type: "object", properties: {} };

/** Function declarations become function tools; googleSearch, codeExecution, urlContext are dropped. */
export function convertTools(tools: GoogleTool[] | undefined): ChatTool[] {
  const out: ChatTool[] = [];
  for (const tool of tools ?? []) {
    for (const declaration of tool.functionDeclarations ?? []) {
      const schema = declaration.parametersJsonSchema ?? declaration.parameters;
      const fn: ChatTool["function"] = {
        name: declaration.name,
        parameters: schema ? (toJsonSchema(schema) as Record<string, unknown>) : EMPTY_PARAMETERS,
      };
      if (declaration.description !== undefined) fn.description = declaration.description;
      out.push({ type: "function", function: fn });
    }
  }
  return out;
}

/**
 * functionCallingConfig.mode: AUTO -> auto, ANY -> required (or the one allowed function by name),
 * NONE -> none, VALIDATED -> auto. Nothing when no tools remain.
 */
export function convertToolChoice(
  config: GoogleToolConfig | undefined,
  tools: ChatTool[],
): ChatToolChoice | undefined {
  const mode = config?.functionCallingConfig?.mode?.toUpperCase();
  if (!mode || tools.length === 0) return undefined;
  if (mode === "AUTO" || mode === "VALIDATED") return "auto";
  if (mode === "NONE") return "none";
  if (mode === "ANY") {
    const allowed = config?.functionCallingConfig?.allowedFunctionNames ?? [];
    if (allowed.length === 1 && tools.some((tool) => tool.function.name === allowed[0])) {
      return { type: "function", function: { name: allowed[0] } };
    }
    return "required";
  }
  return undefined;
}

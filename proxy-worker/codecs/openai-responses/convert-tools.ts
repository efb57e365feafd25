import { z } from "zod";
import type { ChatTool, ChatToolChoice } from "../../chat/types.ts";
import { CodecError } from "../codec.ts";
import { parseOrThrow } from "../common/zod-codec-error.ts";
import { flatToolName, type NamespacedTool, NamespaceTool } from "./namespace-tools.ts";

/** Name under which the hosted `local_shell` tool is offered to the engine as a plain function. */
export const LOCAL_SHELL_FUNCTION = "local_shell";

const FunctionTool = z.looseObject({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const CustomTool = z.looseObject({
  type: z.literal("custom"),
  name: z.string().min(1),
  description: z.string().nullish(),
  format: z
    .looseObject({ type: z.string(), syntax: z.string().nullish(), definition: z.string().nullish() })
    .nullish(),
});

export interface ConvertedTools {
  tools: ChatTool[];
  /** Names of freeform tools: their calls go back to the client as `custom_tool_call{input}`. */
  customTools: string[];
  /** `local_shell` was offered: calls to it go back as `local_shell_call`. */
  localShell: boolean;
  /** Tools offered inside a `namespace` tool: their calls go back with `namespace` and the inner name. */
  namespaced: NamespacedTool[];
}

/**
 * A freeform tool as a function with one string parameter, `input`. The grammar (Codex's
 * apply_patch ships a Lark grammar) is appended to the description: the engine cannot constrain
 * to it, but the model can read it.
 */
function customToFunction(tool: z.infer<typeof CustomTool>): ChatTool {
  let description = tool.description ?? "";
  const format = tool.format;
  if (format?.type === "grammar" && format.definition) {
    description += `${description ? "\n\n" : ""}The \`input\` string must follow this ${format.syntax ?? ""} grammar:\n${format.definition}`;
  }
  return {
    type: "function",
    function: {
      name: tool.name,
      description,
      parameters: {
        type: "object",
        properties: { input: { type: "string", description: "The raw freeform input for this tool." } },
        required: ["input"],
        additionalProperties: false,
      },
    },
  };
}

const LOCAL_SHELL_TOOL: ChatTool = {
  type: "function",
  function: {
    name: LOCAL_SHELL_FUNCTION,
    description: "Runs a shell command on the local machine and returns its output.",
    parameters: {
      type: "object",
      properties: {
        command: { type: "array", items: { type: "string" }, description: "argv of the command to run." },
        workdir: { type: "string", description: "Working directory for the command." },
        timeout_ms: { type: "number", description: "Timeout in milliseconds." },
      },
      required: ["command"],
    },
  },
};

function functionToChat(tool: z.infer<typeof FunctionTool>, name: string): ChatTool {
  return {
    type: "function",
    function: {
      name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.parameters ?? { type: "object", properties: {} },
      ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {}),
    },
  };
}

/** A function or custom tool (top level or inside a namespace) as the engine's function `name`. */
function addCallable(out: ConvertedTools, raw: { type: string }, name: (own: string) => string, at: string) {
  if (raw.type === "function") {
    const tool = parseOrThrow(FunctionTool, raw, "tool", at);
    out.tools.push(functionToChat(tool, name(tool.name)));
  } else {
    const tool = parseOrThrow(CustomTool, raw, "tool", at);
    const flat = name(tool.name);
    out.tools.push(customToFunction({ ...tool, name: flat }));
    out.customTools.push(flat);
  }
}

function addNamespace(out: ConvertedTools, raw: { type: string }, at: string) {
  const namespace = parseOrThrow(NamespaceTool, raw, "namespace tool", at);
  namespace.tools.forEach((inner, index) => {
    const flatten = (name: string) => {
      const flat = flatToolName(namespace.name, name);
      out.namespaced.push({ flat, namespace: namespace.name, name });
      return flat;
    };
    addCallable(out, inner, flatten, `${at}.tools[${index}]`);
  });
}

/**
 * A flattened name must name one tool only, else its call could not be answered faithfully (a
 * top-level `a__b` beside `b` in namespace `a`, or a namespace offered twice): refused by name.
 */
function refuseAmbiguousNames(out: ConvertedTools): void {
  for (const { flat } of out.namespaced) {
    if (out.tools.filter((tool) => tool.function.name === flat).length > 1) {
      throw new CodecError(
        400,
        `tools: '${flat}' names two tools (a tool inside a namespace is offered to the model as '<namespace>__<name>'); rename one`,
        "tools",
      );
    }
  }
}

export function convertTools(tools: readonly { type: string }[] | null | undefined): ConvertedTools {
  const out: ConvertedTools = { tools: [], customTools: [], localShell: false, namespaced: [] };
  (tools ?? []).forEach((raw, index) => {
    const at = `tools[${index}]`;
    if (raw.type === "function" || raw.type === "custom") {
      addCallable(out, raw, (name) => name, at);
    } else if (raw.type === "namespace") {
      addNamespace(out, raw, at);
    } else if (raw.type === "local_shell") {
      out.tools.push(LOCAL_SHELL_TOOL);
      out.localShell = true;
    }
    // Hosted tools (web_search, image_generation, file_search, mcp, ...) run on OpenAI's servers:
    // an open-weights model cannot call them through this proxy, so they are dropped.
  });
  refuseAmbiguousNames(out);
  return out;
}

/** Responses `tool_choice` -> chat; hosted-tool choices fall back to `auto` since those tools are gone. */
export function convertToolChoice(choice: unknown): ChatToolChoice | undefined {
  if (choice === null || choice === undefined) return undefined;
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  if (typeof choice !== "object") return undefined;
  const object = choice as { type?: unknown; name?: unknown; mode?: unknown };
  if ((object.type === "function" || object.type === "custom") && typeof object.name === "string") {
    return { type: "function", function: { name: object.name } };
  }
  if (object.type === "allowed_tools") return object.mode === "required" ? "required" : "auto";
  return "auto";
}

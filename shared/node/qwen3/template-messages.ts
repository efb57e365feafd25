/**
 * OpenAI Chat Completions messages and tools -> the objects the Qwen3 chat template reads,
 * converted the way vLLM's chat utilities do before rendering: text parts joined with "\n",
 * tool-call arguments parsed from their JSON string into objects (the template prints them
 * with `tojson`), `reasoning`/`reasoning_content` handed over as `reasoning_content`.
 */

/** The loose input shape: what a client may send (unknown fields are carried along). */
export interface OpenAIChatMessageLike {
  role: string;
  content?: unknown;
  reasoning?: string | null;
  reasoning_content?: string | null;
  tool_calls?:
    | { id?: string | null; type?: string | null; function: { name: string; arguments: unknown } }[]
    | null;
  tool_call_id?: string | null;
  name?: string | null;
}

export interface TemplateToolCall {
  id?: string;
  type: "function";
  function: { name: string; arguments: unknown };
}

export interface TemplateMessage {
  role: string;
  /** Always a string: the template calls string methods (`startswith`, `split`) on it. */
  content: string;
  reasoning_content?: string;
  tool_calls?: TemplateToolCall[];
  tool_call_id?: string;
  name?: string;
}

/** Joins the text parts of a content array; non-text parts (images) have no text to render. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const texts: string[] = [];
  for (const part of content) {
    if (part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") {
      texts.push((part as { text: string }).text);
    }
  }
  return texts.join("\n");
}

/**
 * vLLM parses a JSON-string `arguments` into an object so that the template's `tojson`
 * re-serializes it; a string that is not a JSON object is left as is (the template prints it verbatim).
 */
function parseArguments(args: unknown): unknown {
  if (typeof args !== "string") return args;
  try {
    const parsed: unknown = JSON.parse(args);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : args;
  } catch {
    return args;
  }
}

export function toTemplateMessages(messages: readonly OpenAIChatMessageLike[]): TemplateMessage[] {
  return messages.map((m) => {
    const out: TemplateMessage = { role: m.role, content: contentText(m.content) };
    const reasoning = m.reasoning_content ?? m.reasoning;
    if (typeof reasoning === "string") out.reasoning_content = reasoning;
    if (m.tool_calls && m.tool_calls.length > 0) {
      out.tool_calls = m.tool_calls.map((call) => ({
        ...(call.id ? { id: call.id } : {}),
        type: "function",
        function: { name: call.function.name, arguments: parseArguments(call.function.arguments) },
      }));
    }
    if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
    if (m.name) out.name = m.name;
    return out;
  });
}

/**
 * Tools as vLLM hands them to the template: pydantic's `model_dump()` of its tool model, so
 * `function` always has `name`, `description`, `parameters` in that order (absent ones as
 * null, which `tojson` prints), followed by any extra keys (e.g. `strict`) in the client's order.
 */
export function toTemplateTools(tools: readonly unknown[]): Record<string, unknown>[] {
  return tools.map((raw) => {
    const tool = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
    const fn = (tool.function && typeof tool.function === "object" ? tool.function : {}) as Record<
      string,
      unknown
    >;
    const { name, description, parameters, ...fnExtra } = fn;
    const { type, function: _function, ...toolExtra } = tool;
    return {
      type: type ?? "function",
      function: { name, description: description ?? null, parameters: parameters ?? null, ...fnExtra },
      ...toolExtra,
    };
  });
}

/**
 * What vLLM's reasoning and tool parsers do to a chat answer, for the `/v1/completions` channel,
 * where the engine returns raw text (docs/tito.md). `qwen3`, as vLLM 0.32's Qwen3 parser
 * (vllm/parser/qwen3.py): with thinking on (the template's default) everything up to `</think>` is
 * reasoning, the opening `<think>` optional (the generation prompt may hold it), a `<tool_call>`
 * ends reasoning too, and an answer cut before either is all reasoning; with
 * `enable_thinking: false` there is no reasoning. Then Hermes tool calls. `hermes`: tool calls only.
 */
import type { ChatToolCall } from "../chat/types.ts";

export const OUTPUT_PARSERS = ["qwen3", "hermes"] as const;
export type OutputParser = (typeof OUTPUT_PARSERS)[number];

export interface ParsedOutput {
  reasoning: string | null;
  content: string | null;
  toolCalls: ChatToolCall[];
}

const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";
const CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

export function parseOutput(
  parser: OutputParser,
  text: string,
  newId: () => string,
  thinking = true,
): ParsedOutput {
  let rest = text;
  let reasoning: string | null = null;
  if (parser === "qwen3" && thinking) {
    const open = rest.startsWith(THINK_OPEN) ? THINK_OPEN.length : 0;
    const close = rest.indexOf(THINK_CLOSE);
    const call = rest.indexOf("<tool_call>");
    if (close >= 0 && (call < 0 || close < call)) {
      reasoning = trimmedOrNull(rest.slice(open, close));
      rest = rest.slice(close + THINK_CLOSE.length);
    } else if (call >= 0) {
      reasoning = trimmedOrNull(rest.slice(open, call));
      rest = rest.slice(call);
    } else {
      return { reasoning: trimmedOrNull(rest.slice(open)), content: null, toolCalls: [] };
    }
  }
  const toolCalls: ChatToolCall[] = [];
  const first = rest.indexOf("<tool_call>");
  if (first >= 0) {
    for (const m of rest.slice(first).matchAll(CALL)) {
      const call = parseCall(m[1]);
      // A call that does not parse stays text, as vLLM's hermes parser leaves it.
      if (!call) return { reasoning, content: trimmedOrNull(rest), toolCalls: [] };
      toolCalls.push({ id: newId(), type: "function", function: call });
    }
  }
  const content = trimmedOrNull(toolCalls.length > 0 ? rest.slice(0, first) : rest);
  return { reasoning, content, toolCalls };
}

function parseCall(json: string): { name: string; arguments: string } | null {
  try {
    const v = JSON.parse(json) as { name?: unknown; arguments?: unknown };
    if (typeof v?.name !== "string") return null;
    return { name: v.name, arguments: JSON.stringify(v.arguments ?? {}) };
  } catch {
    return null;
  }
}

function trimmedOrNull(s: string): string | null {
  const t = s.replace(/^\n+|\n+$/g, "");
  return t === "" ? null : t;
}

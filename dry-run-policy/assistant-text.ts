/**
 * The assistant turn as Qwen3 writes it, both ways:
 * - `assistantText` turns a planned turn into the text the model "samples" after
 *   `<|im_start|>assistant\n`: exactly what the chat template renders for that turn when it
 *   re-appears in history (so the next prompt can contain the same tokens), ending with `<|im_end|>`;
 * - `parseAssistantOutput` splits sampled text (possibly truncated) back into reasoning,
 *   content and tool calls the way vLLM's qwen3 reasoning parser and hermes tool parser do,
 *   keeping the character ranges so a stream can say which token belongs where.
 */
import type { PlannedTurn } from "./plan-turn.ts";

const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";
const CALL_OPEN = "<tool_call>";
const CALL_CLOSE = "</tool_call>";

export function assistantText(
  turn: PlannedTurn,
  options: { toJson: (value: unknown) => string; thinking: boolean; endToken: string },
): string {
  let text = "";
  // With thinking off the prompt already ends in an empty think block: the model cannot think.
  if (options.thinking && turn.reasoning !== undefined && turn.reasoning !== "") {
    text += `${THINK_OPEN}\n${stripNewlines(turn.reasoning)}\n${THINK_CLOSE}\n\n${turn.content.replace(/^\n+/, "")}`;
  } else {
    text += turn.content;
  }
  turn.toolCalls.forEach((call, i) => {
    if (i > 0 || turn.content) text += "\n";
    text += `${CALL_OPEN}\n{"name": "${call.name}", "arguments": ${options.toJson(call.arguments)}}\n${CALL_CLOSE}`;
  });
  return text + options.endToken;
}

function stripNewlines(s: string): string {
  return s.replace(/^\n+|\n+$/g, "");
}

export type Range = readonly [start: number, end: number];

export interface ParsedToolCall {
  name: string;
  /** JSON text of the arguments object, serialized like the template's `tojson`. */
  arguments: string;
  range: Range;
}

export interface ParsedAssistantOutput {
  reasoning: string | null;
  content: string | null;
  toolCalls: ParsedToolCall[];
  reasoningRange?: Range;
  contentRange?: Range;
}

/** The [start, end) of `text.slice(start, end)` with leading/trailing newlines left out. */
function trimNewlinesRange(text: string, start: number, end: number): Range {
  while (start < end && text[start] === "\n") start++;
  while (end > start && text[end - 1] === "\n") end--;
  return [start, end];
}

function parseToolCalls(
  text: string,
  from: number,
  toJson: (value: unknown) => string,
): ParsedToolCall[] | undefined {
  const calls: ParsedToolCall[] = [];
  let at = text.indexOf(CALL_OPEN, from);
  while (at >= 0) {
    const close = text.indexOf(CALL_CLOSE, at);
    if (close < 0) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.slice(at + CALL_OPEN.length, close));
    } catch {
      return undefined;
    }
    const call = parsed as { name?: unknown; arguments?: unknown };
    if (!call || typeof call.name !== "string") return undefined;
    calls.push({
      name: call.name,
      arguments: toJson(call.arguments ?? {}),
      range: [at, close + CALL_CLOSE.length],
    });
    at = text.indexOf(CALL_OPEN, close);
  }
  return calls;
}

/**
 * `text` is the sampled text with special tokens skipped (no `<|im_end|>`). A think block
 * left open by truncation counts as reasoning; a tool call that does not parse completely
 * stays as text in content (as vLLM's hermes parser does).
 */
export function parseAssistantOutput(
  text: string,
  toJson: (value: unknown) => string,
): ParsedAssistantOutput {
  const out: ParsedAssistantOutput = { reasoning: null, content: null, toolCalls: [] };
  let pos = 0;
  if (text.startsWith(THINK_OPEN)) {
    const close = text.indexOf(THINK_CLOSE);
    const end = close < 0 ? text.length : close;
    out.reasoningRange = trimNewlinesRange(text, THINK_OPEN.length, end);
    out.reasoning = text.slice(...out.reasoningRange);
    if (close < 0) return out;
    pos = close + THINK_CLOSE.length;
  }
  const firstCall = text.indexOf(CALL_OPEN, pos);
  const calls = firstCall >= 0 ? parseToolCalls(text, firstCall, toJson) : undefined;
  const contentEnd = calls ? firstCall : text.length;
  if (calls) out.toolCalls = calls;
  const range = trimNewlinesRange(text, pos, contentEnd);
  if (range[1] > range[0]) {
    out.contentRange = range;
    out.content = text.slice(...range);
  }
  return out;
}

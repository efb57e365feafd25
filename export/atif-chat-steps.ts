import type { ShardRow } from "../batch-runner/shards/shard-rows.ts";
import { type ChatTokenIds, type Segment, segmentChat } from "../shared/node/qwen3/chat-segments.ts";
import { tokenTexts } from "../shared/node/qwen3/token-texts.ts";

/**
 * A trace's ATIF steps read as the chat it is (Qwen3 chat tokens, cut by shared/node/qwen3/chat-segments.ts):
 * a `system` step (its text without the template's tool block, whose definitions go to
 * `agent.tool_definitions`), `user` steps, and one `agent` step per message, its text plain (no
 * `<|im_start|>` / `<|im_end|>`), its `<think>` as `reasoning_content` and its `<tool_call>` blocks
 * as ATIF `tool_calls`; the `<tool_response>` blocks the template put after it are that step's
 * observation, one result per call in order. An agent message the policy sampled in this trace
 * carries the turn's token ids and logprobs in `metrics`; one that was only history in the
 * prompt is `is_copied_context` (ATIF v1.5: not to be trained on again).
 */
export interface ChatTokenizer {
  imStartId: number;
  encode(text: string): number[];
  tokenBytes(id: number): Uint8Array;
}

export interface ToolCall {
  tool_call_id: string;
  function_name: string;
  arguments: Record<string, unknown>;
}

export interface ChatStep {
  source: "system" | "user" | "agent";
  message: string;
  reasoning_content?: string;
  tool_calls?: ToolCall[];
  observation?: { results: { source_call_id?: string; content: string }[] };
  is_copied_context?: boolean;
  /** Set on sampled turns: the turn's span in response_ids (end exclusive). */
  turn?: { start: number; end: number };
  /** Where the step's tokens start in prompt_ids ‖ response_ids. */
  position: number;
}

export interface ChatTrace {
  steps: ChatStep[];
  /** The tool definitions the template rendered into the system message (OpenAI function schema). */
  toolDefinitions: Record<string, unknown>[] | null;
}

const TOOLS_HEADER = "# Tools\n\nYou may call one or more functions";

export function chatTrace(
  row: Pick<ShardRow, "prompt_ids" | "response_ids" | "loss_mask" | "trace_index">,
  turns: readonly { start: number; end: number }[],
  sp: ChatTokenIds,
  tk: ChatTokenizer,
  standalone: Map<number, string | null>,
): ChatTrace {
  const ids = [...row.prompt_ids, ...row.response_ids];
  const texts = tokenTexts(ids, tk.tokenBytes, standalone);
  const p = row.prompt_ids.length;
  const text = (a: number, b: number) => texts.slice(a, b).join("");
  const byMessage = new Map<number, Segment[]>();
  for (const s of segmentChat(ids, texts, sp))
    byMessage.set(s.message, [...(byMessage.get(s.message) ?? []), s]);
  const steps: ChatStep[] = [];
  let toolDefinitions: Record<string, unknown>[] | null = null;
  let lastAgent: ChatStep | null = null;
  const unclaimed = turns.map((t) => ({ start: t.start + p, end: t.end + p }));
  // Sampled tokens belong to agent steps only, even inside a message that is not an assistant one.
  const sampled = new Uint8Array(ids.length);
  for (const t of unclaimed) sampled.fill(1, t.start, t.end);
  const unsampled = (a: number, b: number) =>
    texts
      .slice(a, b)
      .filter((_, i) => sampled[a + i] === 0)
      .join("");
  for (const [m, segs] of byMessage) {
    const start = segs[0].start;
    const end = segs[segs.length - 1].end;
    const role = segs[0].role;
    if (role === "assistant") {
      const k = unclaimed.findIndex((t) => t.start < end && t.end > start);
      const turn = k >= 0 ? unclaimed.splice(k, 1)[0] : null;
      lastAgent = agentStep(segs, text, row.trace_index, m, turn, p);
      steps.push(lastAgent);
      continue;
    }
    const body = messageBody(unsampled(start, end), role);
    if (segs.some((s) => s.kind === "tool_result")) {
      const results = toolResponses(body);
      if (lastAgent) {
        const calls = lastAgent.tool_calls ?? [];
        lastAgent.observation = {
          results: results.map((content, i) =>
            calls[i] ? { source_call_id: calls[i].tool_call_id, content } : { content },
          ),
        };
        continue;
      }
      steps.push({ source: "user", message: body, position: start });
      continue;
    }
    if (role === "system") {
      const at = body.indexOf(TOOLS_HEADER);
      const own = at >= 0 ? body.slice(0, at).trimEnd() : body;
      if (at >= 0) toolDefinitions = toolsBlock(body.slice(at));
      if (own !== "") steps.push({ source: "system", message: own, position: start });
      continue;
    }
    if (body.trim() !== "") steps.push({ source: "user", message: body, position: start });
    lastAgent = null;
  }
  // A sampled turn outside any assistant message (a completion without the chat template).
  for (const turn of unclaimed) {
    steps.push({
      source: "agent",
      message: messageBody(text(turn.start, turn.end), null),
      turn: { start: turn.start - p, end: turn.end - p },
      position: turn.start,
    });
  }
  steps.sort((a, b) => a.position - b.position);
  return { steps, toolDefinitions };
}

function agentStep(
  segs: Segment[],
  text: (a: number, b: number) => string,
  traceIndex: number,
  message: number,
  turn: { start: number; end: number } | null,
  p: number,
): ChatStep {
  const plain: string[] = [];
  const reasoning: string[] = [];
  const calls: ToolCall[] = [];
  for (const s of segs) {
    const t = text(s.start, s.end);
    if (s.kind === "think")
      reasoning.push(
        t
          .replace(/^<think>/, "")
          .replace(/<\/think>$/, "")
          .trim(),
      );
    else if (s.kind === "tool_call") {
      const call = parseToolCall(t, `call_${traceIndex}_${message}_${calls.length}`);
      if (call) calls.push(call);
      else plain.push(t);
    } else plain.push(t);
  }
  const step: ChatStep = {
    source: "agent",
    message: messageBody(plain.join(""), "assistant").trim(),
    position: segs[0].start,
  };
  const r = reasoning.filter((x) => x !== "").join("\n");
  if (r !== "") step.reasoning_content = r;
  if (calls.length) step.tool_calls = calls;
  if (turn) step.turn = { start: turn.start - p, end: turn.end - p };
  else step.is_copied_context = true;
  return step;
}

/** A message's text without `<|im_start|>role\n` before it and `<|im_end|>` (and the newline) after. */
function messageBody(text: string, role: string | null): string {
  let t = text;
  if (role !== null && t.startsWith("<|im_start|>"))
    t = t.slice("<|im_start|>".length).replace(/^[^\n]*\n/, "");
  return t.replace(/<\|im_end\|>\n?$/, "").replace(/\n$/, "");
}

function parseToolCall(text: string, id: string): ToolCall | null {
  const inner = text
    .replace(/^<tool_call>/, "")
    .replace(/<\/tool_call>$/, "")
    .trim();
  try {
    const v = JSON.parse(inner) as { name?: unknown; arguments?: unknown };
    const args = typeof v.arguments === "string" ? JSON.parse(v.arguments) : v.arguments;
    if (typeof v.name !== "string" || !args || typeof args !== "object" || Array.isArray(args)) return null;
    return { tool_call_id: id, function_name: v.name, arguments: args as Record<string, unknown> };
  } catch {
    return null;
  }
}

function toolResponses(body: string): string[] {
  return [...body.matchAll(/<tool_response>\n?([\s\S]*?)\n?<\/tool_response>/g)].map((m) => m[1]);
}

/** The `<tools>` block of the Qwen3 template: one JSON function definition per line. */
function toolsBlock(text: string): Record<string, unknown>[] | null {
  const m = /<tools>\n([\s\S]*?)\n<\/tools>/.exec(text);
  if (!m) return null;
  try {
    return m[1]
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return null;
  }
}

import { type ChatTokenIds, qwen3ChatTokenIds, segmentChat } from "../../shared/node/qwen3/chat-segments.ts";
import type { Qwen3 } from "../../shared/node/qwen3/qwen3.ts";
import { tokenTexts } from "../../shared/node/qwen3/token-texts.ts";
import type { Trace, Trajectory } from "../../shared/schemas/trajectory.ts";
import { traceTurns } from "./trace-turns.ts";

/**
 * `step_rewards: "tool_results"`: a process reward per sampled turn from how its tool calls went.
 * A turn that called tools gets 1 when every result the harness sent back came without an error, 0
 * when any failed; a turn without tool calls, or whose results never came (the last turn), gets none
 * (null). Results are read from the trace itself (the `<tool_response>` blocks the template put
 * after the turn, Qwen3 chat tokens), so the reward is about what the model saw. A result failed when
 * it matches `TOOL_ERROR`:
 * - `[tool error] ` at its start: an Anthropic `tool_result` with `is_error: true`, as the proxy
 *   renders it for the model (Claude Code flags failed tools so);
 * - `(exit N)` with N != 0 on its last line: a shell command that failed, as the example agent
 *   (examples/agents/mini-agent.mjs) reports it.
 */
export const TOOL_ERROR = /^\[tool error\] |\(exit [1-9]\d*\)\s*$/;

export function toolStepRewards(
  trajectory: Trajectory,
  qwen: Pick<Qwen3, "imStartId" | "encode" | "tokenBytes">,
  isError: RegExp = TOOL_ERROR,
): (number | null)[][] {
  const sp = qwen3ChatTokenIds(qwen);
  const standalone = new Map<number, string | null>();
  return trajectory.traces.map((trace) =>
    traceRewards(trace, sp, (ids) => tokenTexts(ids, qwen.tokenBytes, standalone), isError),
  );
}

function traceRewards(
  trace: Trace,
  sp: ChatTokenIds,
  texts: (ids: readonly number[]) => string[],
  isError: RegExp,
): (number | null)[] {
  const ids = [...trace.prompt_ids, ...trace.response_ids];
  const tokenText = texts(ids);
  const segments = segmentChat(ids, tokenText, sp);
  const offset = trace.prompt_ids.length;
  const turns = traceTurns(trace).map((t) => ({ start: t.start + offset, end: t.end + offset }));
  return turns.map((turn, k) => {
    const called = segments.some(
      (s) => s.kind === "tool_call" && s.start >= turn.start && s.start < turn.end,
    );
    if (!called) return null;
    const until = turns[k + 1]?.start ?? ids.length;
    const results = segments
      .filter((s) => s.kind === "tool_result" && s.start >= turn.end && s.start < until)
      .flatMap((s) => responses(tokenText.slice(s.start, s.end).join("")));
    if (results.length === 0) return null;
    return results.some((r) => isError.test(r)) ? 0 : 1;
  });
}

/** The text of each `<tool_response>` block of a tool-result message, trimmed. */
function responses(message: string): string[] {
  return [...message.matchAll(/<tool_response>\n?([\s\S]*?)\n?<\/tool_response>/g)].map((m) => m[1].trim());
}

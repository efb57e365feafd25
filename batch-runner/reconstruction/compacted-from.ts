import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { BuiltChain } from "./chains.ts";
import { answerText } from "./request-shape.ts";
import { breakFrom, userTexts } from "./spawned-by.ts";

/** Shorter answers could turn up in a user message by chance. */
const MIN_SUMMARY_CHARS = 40;

/**
 * Links each chain that starts from a summary the policy wrote to the chain it summarized: a
 * harness that compacts its history asks for a summary (a side call on the conversation so far),
 * then starts a new context whose user messages carry that summary (Claude Code: the first one;
 * Codex: after the task's own messages). Such a chain's break is
 * `compaction`, whatever the token comparison said (the new prompt need not be shorter), and its
 * parent is the conversation the summary request continued: the summary's own chain when the
 * request extended it, else the chain that chain broke away from.
 */
export function linkCompactions(chains: readonly BuiltChain[]): void {
  const summaries: { chain: BuiltChain; capture: CaptureRecord; text: string }[] = [];
  for (const chain of chains) {
    for (const turn of chain.turns) {
      const text = summaryText(turn.capture);
      if (text !== null) summaries.push({ chain, capture: turn.capture, text });
    }
  }
  if (summaries.length === 0) return;
  for (const chain of chains) {
    // A sub-agent or a retry is explained already; the first chain has nothing before it.
    if (chain.brk === null || chain.brk.reason === "retry" || chain.brk.toolCallId !== undefined) continue;
    const first = chain.turns[0].capture;
    const user = userTexts(first).join("\n");
    if (user === "") continue;
    let found: (typeof summaries)[number] | null = null;
    for (const s of summaries) {
      if (s.chain === chain || s.capture.capture_id >= first.capture_id) continue;
      if (user.includes(s.text) && (found === null || s.capture.capture_id > found.capture.capture_id))
        found = s;
    }
    if (found === null) continue;
    const summarized =
      found.chain.turns.length === 1 && found.chain.brk !== null ? found.chain.brk.parent : found.chain;
    if (summarized === chain) continue;
    chain.brk = breakFrom(chain, summarized, "compaction");
  }
}

/** An answer long enough to be a summary: the text inside `<summary>` when the answer has one. */
function summaryText(capture: CaptureRecord): string | null {
  const answer = answerText(capture);
  if (answer === null) return null;
  const inner = /<summary>([\s\S]*?)<\/summary>/.exec(answer)?.[1]?.trim() ?? answer;
  return inner.length >= MIN_SUMMARY_CHARS ? inner : null;
}

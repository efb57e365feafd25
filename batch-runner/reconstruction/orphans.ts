import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { type BuiltChain, type PromptIndex, repeatedLater } from "./chains.ts";
import { answerText, continues, requestShape } from "./request-shape.ts";

/**
 * Tags the samples the harness never used (docs/reconstruction.md, "Orphans"):
 * - `retried`: a one-turn chain whose exact prompt a later call sent again (the later one replaced it);
 * - `auxiliary`: a one-turn chain other than the main one whose system prompt or tools differ from
 *   the main chain's (a title or summary request, a one-shot side call) and whose answer text no
 *   later request carries (an answer that comes back, like a one-shot sub-agent's reply or the
 *   summary that replaces a compacted history, was used), and that does not carry the main
 *   conversation on (a call whose messages extend a main-chain request is that conversation with a
 *   changed system prompt or tools: a sampled turn the harness went on from, not a side call).
 * The main chain (most turns, then most sampled tokens, then the earliest) is never an orphan, so
 * a session's final answer, which nothing extends either, is not one.
 */
export function tagOrphans(
  chains: readonly BuiltChain[],
  index: PromptIndex,
  captures: readonly CaptureRecord[],
): void {
  for (const c of chains) {
    if (c.turns.length === 1 && repeatedLater(index, c.turns[0])) c.orphanReason = "retried";
  }
  const main = mainChain(chains.filter((c) => c.orphanReason === null));
  if (main === null) return;
  const mainShape = requestShape(main.turns[main.turns.length - 1].capture);
  if (mainShape === null) return;
  const mainShapes = main.turns.map((t) => requestShape(t.capture)).filter((s) => s !== null);
  const carriesMainOn = (shape: NonNullable<ReturnType<typeof requestShape>>) =>
    mainShapes.some((m) => shape.rest.length > m.rest.length && continues(m, shape));
  const requestText = new Map<CaptureRecord, string>();
  const reappears = (text: string, after: string): boolean => {
    const needle = JSON.stringify(text).slice(1, -1);
    return captures.some((c) => {
      if (c.capture_id <= after) return false;
      let json = requestText.get(c);
      if (json === undefined) {
        json = JSON.stringify(c.chat_request) ?? "";
        requestText.set(c, json);
      }
      return json.includes(needle);
    });
  };
  for (const c of chains) {
    if (c === main || c.orphanReason !== null || c.turns.length !== 1) continue;
    const capture = c.turns[0].capture;
    const shape = requestShape(capture);
    if (shape === null || (shape.system === mainShape.system && shape.tools === mainShape.tools)) continue;
    if (carriesMainOn(shape)) continue;
    const answer = answerText(capture);
    if (answer !== null && reappears(answer, capture.capture_id)) continue;
    c.orphanReason = "auxiliary";
  }
}

function mainChain(chains: readonly BuiltChain[]): BuiltChain | null {
  let best: BuiltChain | null = null;
  let bestTokens = 0;
  for (const c of chains) {
    const tokens = c.turns.reduce((n, t) => n + t.response.length, 0);
    if (
      best === null ||
      c.turns.length > best.turns.length ||
      (c.turns.length === best.turns.length && tokens > bestTokens)
    ) {
      best = c;
      bestTokens = tokens;
    }
  }
  return best;
}

import type { Trace } from "../../shared/schemas/trajectory.ts";

/** A sampled turn's tokens in `response_ids`, end exclusive. */
export interface TurnSpan {
  start: number;
  end: number;
}

/**
 * The trace's sampled turns, in order: what `Evaluation.step_rewards[trace][turn]` is indexed by.
 * Reconstruction records one `version_spans` entry per turn; a trace from before those existed falls
 * back to its runs of sampled (mask 1) tokens, which are the same turns whenever the template
 * inserts anything between two turns (every chat template does).
 */
export function traceTurns(trace: Pick<Trace, "version_spans" | "loss_mask">): TurnSpan[] {
  if (trace.version_spans.length > 0) return trace.version_spans.map(({ start, end }) => ({ start, end }));
  const turns: TurnSpan[] = [];
  let start = -1;
  trace.loss_mask.forEach((m, i) => {
    if (m === 1 && start < 0) start = i;
    if (m !== 1 && start >= 0) {
      turns.push({ start, end: i });
      start = -1;
    }
  });
  if (start >= 0) turns.push({ start, end: trace.loss_mask.length });
  return turns;
}

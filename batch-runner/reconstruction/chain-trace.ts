import { engineImages } from "../../shared/images/image-refs.ts";
import type { Trace } from "../../shared/schemas/trajectory.ts";
import type { EndOfTurnCounts } from "./end-of-turn.ts";
import { type TurnFacts, turnFacts } from "./turn-facts.ts";
import type { Turn } from "./usable-captures.ts";

/** The fields a builder sets after the chains are known (breaks, orphans, gaps). */
export const UNBROKEN = {
  orphan: false,
  orphan_reason: null,
  break_reason: null,
  parent_trace: null,
  parent_tool_call_id: null,
  break_position: null,
  break_context_ids: null,
  capture_gaps: 0,
  // Process rewards come from the evaluator, after reconstruction.
  step_rewards: null,
} as const satisfies Partial<Trace>;

/** Sampling and filtered tool calls go in metadata only when there is something to say. */
export function traceMetadata(facts: TurnFacts): Record<string, unknown> {
  return {
    ...(facts.sampling.length > 0 ? { sampling: facts.sampling } : {}),
    ...(facts.filtered_tool_calls.length > 0 ? { filtered_tool_calls: facts.filtered_tool_calls } : {}),
  };
}

/**
 * One chain as one trace. The last turn's prompt + response already holds every earlier turn
 * token for token (that is what joining a chain required), so the trace is that sequence cut
 * after the first prompt, with mask 1 and the engine's logprobs exactly where a turn's response
 * sits, and mask 0 / logprob 0 on the interstitial tokens the harness or template inserted.
 */
export function chainToTrace(
  turns: readonly Turn[],
  endOfTurn: ReadonlySet<number>,
  toolCallIds: readonly number[],
): Trace {
  const first = turns[0];
  const last = turns[turns.length - 1];
  const start = first.prompt.length;
  const length = last.prompt.length + last.response.length - start;
  const responseIds = new Array<number>(length);
  for (let i = start; i < last.prompt.length; i++) responseIds[i - start] = last.prompt[i];
  for (let i = 0; i < last.response.length; i++)
    responseIds[last.prompt.length - start + i] = last.response[i];
  const mask = new Array<0 | 1>(length).fill(0);
  const logprobs = new Array<number>(length).fill(0);
  let logprobsComplete = true;
  const offsets: number[] = [];
  for (const turn of turns) {
    const at = turn.prompt.length - start;
    offsets.push(at);
    const lp = turn.logprobs;
    if (lp === null && turn.response.length > 0) logprobsComplete = false;
    for (let i = 0; i < turn.response.length; i++) {
      mask[at + i] = 1;
      if (lp !== null) logprobs[at + i] = lp[i];
    }
  }
  const versions: string[] = [];
  for (const turn of turns) {
    const v = turn.capture.policy_version;
    if (v !== null && !versions.includes(v)) versions.push(v);
  }
  const facts = turnFacts(turns, offsets, toolCallIds);
  return {
    prompt_ids: first.prompt.slice(),
    response_ids: responseIds,
    loss_mask: mask,
    response_logprobs: logprobsComplete ? logprobs : null,
    reward: null,
    finish_reason: last.capture.finish_reason,
    capture_ids: turns.map((t) => t.capture.capture_id),
    // The chain's earliest version is the stalest one: what an async trainer must bound.
    policy_version: versions[0] ?? null,
    metadata: {
      turns: turns.length,
      policy_versions: versions,
      end_of_turn: countEndOfTurn(turns, endOfTurn),
      ...traceMetadata(facts),
    },
    ...UNBROKEN,
    version_spans: facts.version_spans,
    crossed_weight_update: facts.crossed_weight_update,
    image_hashes: engineImages(last.capture).map((r) => r.sha256),
  };
}

function countEndOfTurn(turns: readonly Turn[], endOfTurn: ReadonlySet<number>): EndOfTurnCounts {
  const counts: EndOfTurnCounts = { sampled: 0, template: 0, none: 0 };
  for (let k = 0; k + 1 < turns.length; k++) {
    const { prompt, response } = turns[k];
    const lastSampled = response.length > 0 ? response[response.length - 1] : -1;
    const nextToken = turns[k + 1].prompt[prompt.length + response.length];
    if (endOfTurn.has(lastSampled)) counts.sampled++;
    else if (nextToken !== undefined && endOfTurn.has(nextToken)) counts.template++;
    else counts.none++;
  }
  return counts;
}

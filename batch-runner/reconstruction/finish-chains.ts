import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { Trace } from "../../shared/schemas/trajectory.ts";
import { type BuildOutput, CaptureGapError } from "./builder.ts";
import type { BuilderConfig } from "./builder-config.ts";
import { assignGaps } from "./capture-gaps.ts";
import { explainBreaks } from "./chain-breaks.ts";
import { chainToTrace } from "./chain-trace.ts";
import type { BuiltChain, PromptIndex } from "./chains.ts";
import { linkCompactions } from "./compacted-from.ts";
import { tagOrphans } from "./orphans.ts";
import { linkSubAgents } from "./spawned-by.ts";
import type { UsableCaptures } from "./usable-captures.ts";

export interface FinishInput {
  captures: readonly CaptureRecord[];
  usable: UsableCaptures;
  settings: BuilderConfig;
  eot: ReadonlySet<number>;
  index: PromptIndex;
  /** Prefix merging explains its chain breaks; per_request has none. */
  explainBreaks: boolean;
}

/**
 * From chains to the builder's output, the same way for every builder: traces ordered by first
 * capture_id, breaks explained, orphans tagged, id-less captures counted against the chains they
 * fall in, then `builder.config.orphans` and `on_missing_ids` applied.
 */
export function finishChains(found: readonly BuiltChain[], input: FinishInput): BuildOutput {
  const { settings, usable } = input;
  if (settings.on_missing_ids === "error" && usable.gaps.length > 0) {
    const ids = usable.gaps.map((c) => c.capture_id);
    throw new CaptureGapError(
      `${ids.length} capture(s) without token ids (${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", ..." : ""}): ` +
        "their samples cannot be trained on, and builder.config.on_missing_ids is error",
    );
  }
  const chains = [...found].sort((a, b) =>
    compare(a.turns[0].capture.capture_id, b.turns[0].capture.capture_id),
  );
  const prefixBreaks = input.explainBreaks ? explainBreaks(chains, input.index) : 0;
  if (input.explainBreaks) {
    linkSubAgents(chains);
    linkCompactions(chains);
  }
  tagOrphans(chains, input.index, input.captures);
  assignGaps(chains, usable.gaps);

  const position = new Map(chains.map((c, i) => [c, i]));
  const all = chains.map((c): Trace => {
    const trace = chainToTrace(c.turns, input.eot, settings.tool_call_ids);
    trace.orphan = c.orphanReason !== null;
    trace.orphan_reason = c.orphanReason;
    trace.capture_gaps = c.gaps;
    if (c.brk !== null) {
      trace.break_reason = c.brk.reason;
      trace.parent_trace = position.get(c.brk.parent) ?? null;
      trace.break_position = c.brk.position;
      trace.break_context_ids = c.brk.context;
      trace.parent_tool_call_id = c.brk.toolCallId ?? null;
    }
    if (trace.orphan && settings.orphans === "mask") maskTrace(trace, "orphan");
    else if (trace.capture_gaps > 0 && settings.on_missing_ids === "mask") maskTrace(trace, "capture_gap");
    return trace;
  });
  const { traces, dropped } = settings.orphans === "drop" ? dropOrphans(all) : { traces: all, dropped: [] };

  const breakReasons: Record<string, number> = {};
  for (const c of chains)
    if (c.brk !== null) breakReasons[c.brk.reason] = (breakReasons[c.brk.reason] ?? 0) + 1;
  let trainable = 0;
  let context = 0;
  for (const t of traces) {
    for (const m of t.loss_mask) trainable += m;
    context += t.prompt_ids.length + t.loss_mask.length;
  }
  return {
    traces,
    dropped,
    stats: {
      captures: input.captures.length,
      excluded_no_token_ids: usable.excludedNoTokenIds,
      excluded_failed: usable.excludedFailed,
      chains: chains.length,
      prefix_breaks: prefixBreaks,
      trainable_tokens: trainable,
      context_tokens: context - trainable,
      capture_gaps: usable.gaps.length,
      orphans: all.filter((t) => t.orphan).length,
      break_reasons: breakReasons,
    },
  };
}

/** No token of the trace is trained on; logprobs are 0 wherever the mask is 0 (the Trace contract). */
function maskTrace(trace: Trace, why: string): void {
  trace.loss_mask = trace.loss_mask.map(() => 0 as const);
  trace.response_logprobs = trace.response_ids.map(() => 0);
  trace.metadata = { ...trace.metadata, masked: why };
}

/** Leaves orphan traces out; a kept trace whose parent was dropped points at that parent's parent. */
function dropOrphans(all: readonly Trace[]): { traces: Trace[]; dropped: string[] } {
  const newIndex = new Map<number, number>();
  const traces: Trace[] = [];
  const dropped: string[] = [];
  all.forEach((t, i) => {
    if (t.orphan) dropped.push(...t.capture_ids);
    else {
      newIndex.set(i, traces.length);
      traces.push(t);
    }
  });
  for (const t of traces) {
    let parent = t.parent_trace;
    const seen = new Set<number>();
    while (parent !== null && !newIndex.has(parent) && !seen.has(parent)) {
      seen.add(parent);
      parent = all[parent].parent_trace;
    }
    t.parent_trace = parent === null ? null : (newIndex.get(parent) ?? null);
  }
  return { traces, dropped };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

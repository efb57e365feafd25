import { compareIds } from "../../shared/ids.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";

/** One trace of one session: a row of `trajectories/{task_id}.parquet` (and of the JSONL twin). */
export interface ShardRow {
  task_id: string;
  session_id: string;
  sample_index: number;
  trace_index: number;
  /** GRPO groups the samples of one prompt: every row of a task shares it. */
  group_id: string;
  status: string;
  reward: number | null;
  finish_reason: string | null;
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: number[];
  response_logprobs: number[] | null;
  policy_version: string | null;
  /** The version the trace's last sampled turn ended under (its `policy_version_end`). */
  policy_version_end: string | null;
  /** JSON text with sorted keys: the trace's metadata plus capture_ids, attempt and (after a break) break_position and break_context_ids. */
  metadata: string;
  orphan: boolean;
  orphan_reason: string | null;
  break_reason: string | null;
  parent_trace: number | null;
  /** A sub-agent's spawning tool call in the parent trace. */
  parent_tool_call_id: string | null;
  crossed_weight_update: boolean;
  capture_gaps: number;
  /** JSON text: `[{start, end, version_start, version_end}]`, offsets into response_ids. */
  version_spans: string;
  /** JSON text: `[{start, end, reward}]`, the evaluator's per-turn process rewards; null when it gave none. */
  step_rewards: string | null;
  /** SHA-256 of each image the trace's tokens hold, in engine order; each is `blobs/sha256/{hash}` in the store. */
  image_hashes: string[];
}

/**
 * Rows of a group shard, sorted by sample_index, session_id, trace_index so the bytes do not
 * depend on which runner wrote the shard or in which order results were listed. A trace's own
 * reward (from per-trace evaluator rewards) wins over the session's outcome reward.
 */
export function shardRows(results: readonly SessionResult[]): ShardRow[] {
  const sorted = [...results].sort(
    (a, b) => a.sample_index - b.sample_index || compareIds(a.session_id, b.session_id),
  );
  const rows: ShardRow[] = [];
  for (const r of sorted) {
    r.trajectory.traces.forEach((t, i) => {
      rows.push({
        task_id: r.task_id,
        session_id: r.session_id,
        sample_index: r.sample_index,
        trace_index: i,
        group_id: r.task_id,
        status: r.status,
        reward: t.reward ?? r.reward,
        finish_reason: t.finish_reason,
        prompt_ids: t.prompt_ids,
        response_ids: t.response_ids,
        loss_mask: t.loss_mask,
        response_logprobs: t.response_logprobs,
        policy_version: t.policy_version,
        policy_version_end: t.version_spans.at(-1)?.version_end ?? null,
        metadata: canonicalJson({
          ...t.metadata,
          capture_ids: t.capture_ids,
          attempt: r.attempt,
          // Where a chain broke has no column of its own: viewers of a shard find it here.
          ...(t.break_position === null
            ? {}
            : { break_position: t.break_position, break_context_ids: t.break_context_ids }),
        }),
        orphan: t.orphan,
        orphan_reason: t.orphan_reason,
        break_reason: t.break_reason,
        parent_trace: t.parent_trace,
        parent_tool_call_id: t.parent_tool_call_id,
        crossed_weight_update: t.crossed_weight_update,
        capture_gaps: t.capture_gaps,
        version_spans: canonicalJson(t.version_spans),
        step_rewards: t.step_rewards === null ? null : canonicalJson(t.step_rewards),
        image_hashes: t.image_hashes,
      });
    });
  }
  return rows;
}

/** JSON with object keys sorted at every depth: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => compareIds(a, b)))
      : v,
  );
}

import type { ShardRow } from "../batch-runner/shards/shard-rows.ts";
import type { Inspectable } from "./load-inspectable.ts";
import { describeExtras, type TraceExtras } from "./trace-extras.ts";

const pct = (part: number, whole: number) => (whole === 0 ? "0%" : `${((100 * part) / whole).toFixed(1)}%`);
const count = (mask: readonly number[]) => mask.reduce((n, m) => n + m, 0);

/** The numbers a person checks first: traces, token counts, trainable share, rewards. */
export function summarize(file: string, data: Inspectable): string[] {
  const { rows, result } = data;
  const extrasOf = new Map(rows.map((r, i) => [r, data.extras[i] ?? {}]));
  const sessions = new Set(rows.map((r) => r.session_id));
  const prompt = rows.reduce((n, r) => n + r.prompt_ids.length, 0);
  const response = rows.reduce((n, r) => n + r.response_ids.length, 0);
  const trainable = rows.reduce((n, r) => n + count(r.loss_mask), 0);
  const lines = [`${file}: ${data.kind}`];
  if (result) {
    const s = result.trajectory.reconstruction_stats;
    lines.push(
      `  task ${result.task_id}  session ${result.session_id}  sample ${result.sample_index}  attempt ${result.attempt}  status ${result.status}  reward ${result.reward ?? "none"}`,
      `  builder ${result.trajectory.builder}: ${s.captures} captures, ${s.excluded_failed} failed and ${s.excluded_no_token_ids} without token ids excluded, ${s.chains} chains, ${s.prefix_breaks} prefix breaks`,
    );
    const x = data.statsExtras;
    const more = [
      x?.capture_gaps ? `${x.capture_gaps} capture gaps` : "",
      x?.orphans ? `${x.orphans} orphans` : "",
      x?.break_reasons && Object.keys(x.break_reasons).length > 0
        ? `break reasons ${Object.entries(x.break_reasons)
            .map(([k, n]) => `${k} ${n}`)
            .join(", ")}`
        : "",
    ].filter(Boolean);
    if (more.length > 0) lines.push(`  ${more.join("; ")}`);
    if (result.error) lines.push(`  error: ${result.error}`);
  }
  lines.push(
    `  ${rows.length} traces from ${sessions.size} sessions; ${prompt + response} tokens (${prompt} prompt, ${response} response), ${trainable} trainable = ${pct(trainable, prompt + response)} of all, ${pct(trainable, response)} of response`,
  );
  const rewards = rows.map((r) => r.reward).filter((r): r is number => r !== null);
  if (rewards.length > 0) {
    const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    lines.push(
      `  rewards: ${rewards.length} of ${rows.length} traces, mean ${mean.toFixed(4)}, min ${Math.min(...rewards)}, max ${Math.max(...rewards)}`,
    );
  } else {
    lines.push("  rewards: none");
  }
  for (const r of rows) lines.push(`  ${traceLine(r, extrasOf.get(r) ?? {})}`);
  for (const session of sessions) {
    const mine = rows.filter((r) => r.session_id === session);
    lines.push(...lineage(session, mine, (r) => extrasOf.get(r) ?? {}));
  }
  return lines;
}

/**
 * A session's traces as a tree when some chain broke away from another: each trace under the one
 * it came from, with the break reason and, for a sub-agent, the tool call that spawned it.
 */
export function lineage(session: string, rows: readonly ShardRow[], extrasOf: (r: ShardRow) => TraceExtras) {
  const children = new Map<number | null, ShardRow[]>();
  const indexes = new Set(rows.map((r) => r.trace_index));
  for (const r of rows) {
    const parent = extrasOf(r).parent_trace ?? null;
    const key = parent !== null && indexes.has(parent) ? parent : null;
    children.set(key, [...(children.get(key) ?? []), r]);
  }
  if ((children.get(null)?.length ?? 0) === rows.length) return [];
  const lines = [`  lineage of session ${session}:`];
  const walk = (r: ShardRow, depth: number, seen: Set<number>) => {
    if (seen.has(r.trace_index)) return;
    seen.add(r.trace_index);
    const e = extrasOf(r);
    const why = e.break_reason
      ? `  ${e.break_reason}${e.parent_tool_call_id ? ` via tool call ${e.parent_tool_call_id}` : ""}`
      : "";
    lines.push(`${"  ".repeat(depth + 2)}trace ${r.trace_index}${why}`);
    for (const c of children.get(r.trace_index) ?? []) walk(c, depth + 1, seen);
  };
  const seen = new Set<number>();
  for (const root of children.get(null) ?? []) walk(root, 0, seen);
  return lines;
}

function traceLine(r: ShardRow, extras: TraceExtras): string {
  const t = count(r.loss_mask);
  const flags = describeExtras(extras);
  return [
    `[${r.session_id} #${r.sample_index} trace ${r.trace_index}]`,
    `${r.status}`,
    `prompt ${r.prompt_ids.length}`,
    `response ${r.response_ids.length} (${t} trainable, ${pct(t, r.response_ids.length)})`,
    `reward ${r.reward ?? "none"}`,
    `finish ${r.finish_reason ?? "none"}`,
    `policy ${r.policy_version ?? "none"}`,
    `logprobs ${r.response_logprobs === null ? "missing" : "yes"}`,
    ...(flags ? [flags] : []),
  ].join("  ");
}

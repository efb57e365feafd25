import { keys } from "../shared/keys.ts";
import { SessionResult } from "../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";

/** What `polar run` says about one task at the end, read back from the store. */
export interface TaskSummary {
  task_id: string;
  num_samples: number;
  /** Sessions with a result, by status. */
  statuses: Record<string, number>;
  finished: number;
  meanReward: number | null;
  /** Each ERROR session's stored reason. */
  errors: { session_id: string; error: string }[];
  /** The Parquet shard's key, or the JSONL twin's when no session produced a trace; null if not written. */
  shard: string | null;
  shardKind: "parquet" | "jsonl-only" | "none";
}

export async function summarizeTask(
  store: ObjectStore,
  task: { task_id: string; num_samples: number },
): Promise<TaskSummary> {
  const summary: TaskSummary = {
    task_id: task.task_id,
    num_samples: task.num_samples,
    statuses: {},
    finished: 0,
    meanReward: null,
    errors: [],
    shard: null,
    shardKind: "none",
  };
  let rewardSum = 0;
  let rewarded = 0;
  for (const key of await store.list(keys.resultsOfTask(task.task_id))) {
    const bytes = await store.get(key);
    if (!bytes) continue;
    let parsed: ReturnType<typeof SessionResult.safeParse>;
    try {
      parsed = SessionResult.safeParse(JSON.parse(new TextDecoder().decode(bytes)));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const r = parsed.data;
    summary.finished++;
    summary.statuses[r.status] = (summary.statuses[r.status] ?? 0) + 1;
    if (r.reward !== null) {
      rewardSum += r.reward;
      rewarded++;
    }
    if (r.status === "ERROR")
      summary.errors.push({ session_id: r.session_id, error: r.error ?? "(no reason stored)" });
  }
  summary.meanReward = rewarded ? rewardSum / rewarded : null;
  const shards = await store.list(`trajectories/${task.task_id}.`);
  if (shards.includes(keys.shard(task.task_id))) {
    summary.shard = keys.shard(task.task_id);
    summary.shardKind = "parquet";
  } else if (shards.includes(keys.shardJsonl(task.task_id))) {
    summary.shard = keys.shardJsonl(task.task_id);
    summary.shardKind = "jsonl-only";
  }
  return summary;
}

/** The shard column, honest about why there is no Parquet file. */
export function shardWording(s: TaskSummary, pathOf: (key: string) => string): string {
  if (s.shardKind === "parquet" && s.shard) return pathOf(s.shard);
  if (s.shardKind === "jsonl-only" && s.shard)
    return `no Parquet shard: no session produced a trace (rows: ${pathOf(s.shard)})`;
  return `no shard yet: ${s.finished} of ${s.num_samples} session(s) have a result`;
}

/** A plain-text table: task, sessions by status, mean reward, shard. */
export function summaryTable(summaries: TaskSummary[], pathOf: (key: string) => string): string {
  const header = ["task", "sessions", "COMPLETED", "TIMEOUT", "ERROR", "mean reward", "shard"];
  const rows = summaries.map((s) => [
    s.task_id,
    `${s.finished}/${s.num_samples}`,
    String(s.statuses.COMPLETED ?? 0),
    String(s.statuses.TIMEOUT ?? 0),
    String(s.statuses.ERROR ?? 0),
    s.meanReward === null ? "-" : s.meanReward.toFixed(3),
    shardWording(s, pathOf),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

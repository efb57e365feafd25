import { z } from "zod";
import { keys } from "../../shared/keys.ts";
import type { StoredTask } from "../../shared/schemas/task.ts";
import { TrajectoryStatus } from "../../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { readDocument, unlessUnreadable } from "../../shared/store/read-document.ts";
import type { StatusBody, TaskState } from "./schemas.ts";

/** Only the field the counts need: results carry whole trajectories, no point validating those here. */
const ResultStatus = z.object({ status: TrajectoryStatus });

/** Result files read at once; a task can have thousands, and a Worker allows few open subrequests. */
const READ_CONCURRENCY = 6;

/**
 * The status of a stored task from what the runners wrote: `started/`, `results/`, the shard, the
 * cancel marker. A cancelled task stays `cancelled` after its (failed) sessions land and the shard
 * is written: a trainer must not take a cancelled group for a finished one.
 */
export async function taskStatus(store: ObjectStore, task: StoredTask): Promise<StatusBody> {
  const id = task.task_id;
  const { results, started, jsonlKey, shardKey, cancelled } = await taskMarkers(store, id);
  const counts = {
    finished: results.length,
    pending: 0,
    started,
    COMPLETED: 0,
    TIMEOUT: 0,
    ERROR: 0,
    unreadable: 0,
  };
  counts.pending = Math.max(0, task.num_samples - results.length);
  await forEachLimited(results, READ_CONCURRENCY, async (key) => {
    const status = await readStatus(store, key);
    if (status) counts[status]++;
    else counts.unreadable++;
  });
  const completed = jsonlKey !== null;
  return {
    task_id: id,
    state: stateOf({ cancelled, completed, started }),
    submitted_at: task.submitted_at,
    num_samples: task.num_samples,
    counts,
    cancelled,
    shard_key: completed ? shardKey : null,
    shard_jsonl_key: jsonlKey,
  };
}

/** The one rule for a task's state (control API and `polar view`). */
export function stateOf(m: { cancelled: boolean; completed: boolean; started: number }): TaskState {
  return m.cancelled ? "cancelled" : m.completed ? "completed" : m.started > 0 ? "running" : "queued";
}

/** What the runners wrote for a task: result keys, sessions started, the shard's keys, the cancel marker. */
export async function taskMarkers(store: ObjectStore, id: string) {
  const [resultKeys, shardKeys, startedKeys, cancelled] = await Promise.all([
    store.list(keys.resultsOfTask(id)),
    store.list(`trajectories/${id}.`),
    store.list(keys.startedOfTask(id)),
    store.get(keys.cancel(id)).then((b) => b !== null),
  ]);
  const results = resultKeys.filter((k) => k.endsWith(".json"));
  // A result without a start marker: a session ended before its harness ran (cancelled, refused).
  const started = new Set([...startedKeys, ...results.map((k) => k.slice(0, -".json".length))].map(sessionOf))
    .size;
  // The writer puts the Parquet file first and its JSONL twin last, so the twin marks completion.
  const jsonlKey = shardKeys.includes(keys.shardJsonl(id)) ? keys.shardJsonl(id) : null;
  const shardKey = shardKeys.includes(keys.shard(id)) ? keys.shard(id) : null;
  return { results, started, jsonlKey, shardKey, cancelled };
}

function sessionOf(key: string): string {
  return key.slice(key.lastIndexOf("/") + 1);
}

async function readStatus(store: ObjectStore, key: string): Promise<TrajectoryStatus | null> {
  const result = await readDocument(store, key, ResultStatus, "session result").catch(unlessUnreadable);
  return result?.status ?? null;
}

async function forEachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}

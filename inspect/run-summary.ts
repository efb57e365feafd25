import { SessionResult } from "../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { statsExtras } from "./trace-extras.ts";

/**
 * A store (or `polar run --out` directory) at a glance: per task, its sessions by status, mean
 * reward, traces, and the chain breaks, orphans and capture gaps reconstruction counted.
 */
export async function summarizeStore(store: ObjectStore): Promise<string[]> {
  const keys = (await store.list("results/")).filter((k) => k.endsWith(".json"));
  const byTask = new Map<string, string[]>();
  for (const k of keys) {
    const task = k.split("/")[1] as string;
    byTask.set(task, [...(byTask.get(task) ?? []), k]);
  }
  const shards = new Set((await store.list("trajectories/")).filter((k) => k.endsWith(".parquet")));
  const lines = [`${store.url}: store, ${byTask.size} tasks, ${keys.length} session results`];
  const decoder = new TextDecoder();
  for (const [task, taskKeys] of [...byTask].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const statuses: Record<string, number> = {};
    const rewards: number[] = [];
    let traces = 0;
    let orphans = 0;
    let gaps = 0;
    const unreadable: string[] = [];
    const breaks: Record<string, number> = {};
    for (const key of taskKeys) {
      const bytes = await store.get(key);
      let raw: unknown;
      try {
        raw = bytes ? JSON.parse(decoder.decode(bytes)) : null;
      } catch {
        raw = null;
      }
      const parsed = SessionResult.safeParse(raw);
      if (!parsed.success) {
        unreadable.push(key);
        continue;
      }
      const r = parsed.data;
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.reward !== null) rewards.push(r.reward);
      traces += r.trajectory.traces.length;
      const x = statsExtras(
        (raw as { trajectory?: { reconstruction_stats?: unknown } }).trajectory?.reconstruction_stats,
      );
      orphans += x.orphans ?? 0;
      gaps += x.capture_gaps ?? 0;
      for (const [reason, n] of Object.entries(x.break_reasons ?? {}))
        breaks[reason] = (breaks[reason] ?? 0) + n;
    }
    const n = taskKeys.length - unreadable.length;
    const mean = rewards.length ? (rewards.reduce((a, b) => a + b, 0) / rewards.length).toFixed(4) : "none";
    const status = Object.entries(statuses)
      .map(([s, c]) => `${s} ${c}`)
      .join(", ");
    const flags = [
      Object.keys(breaks).length
        ? `breaks ${Object.entries(breaks)
            .map(([k, c]) => `${k} ${c}`)
            .join(", ")}`
        : "",
      orphans ? `${orphans} orphans` : "",
      gaps ? `${gaps} capture gaps` : "",
    ].filter(Boolean);
    lines.push(
      `  ${task}: ${n} sessions (${status || "none readable"}), mean reward ${mean} over ${rewards.length}, ${traces} traces${flags.length ? `; ${flags.join("; ")}` : ""}${shards.has(`trajectories/${task}.parquet`) ? "" : "; no shard yet"}`,
    );
    for (const k of unreadable) lines.push(`    unreadable: ${k}`);
  }
  return lines;
}

/** The result key of `session` in a store, or null. */
export async function findSessionResult(store: ObjectStore, session: string): Promise<string | null> {
  const keys = await store.list("results/");
  return keys.find((k) => k.endsWith(`/${session}.json`)) ?? null;
}

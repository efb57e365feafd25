import type { ShardRow } from "./shard-rows.ts";

/** The JSONL twin of the Parquet shard: one row per line, same fields in the same order. */
export function encodeShardJsonl(rows: readonly ShardRow[]): string {
  return rows.map((r) => `${JSON.stringify(r)}\n`).join("");
}

import { parquetReadObjects } from "hyparquet";
import type { ShardRow } from "./shard-rows.ts";

/** Columns a shard written before they existed lacks, with the value that means "nothing to say". */
const COLUMN_DEFAULTS = {
  policy_version_end: null,
  orphan: false,
  orphan_reason: null,
  break_reason: null,
  parent_trace: null,
  crossed_weight_update: false,
  capture_gaps: 0,
  version_spans: "[]",
  parent_tool_call_id: null,
  step_rewards: null,
  image_hashes: [] as string[],
} as const satisfies Partial<ShardRow>;

/** Reads a Parquet shard back into rows (for `polar inspect` and tests); older shards get the newer columns' defaults. */
export async function readShardParquet(bytes: Uint8Array): Promise<ShardRow[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const objects = await parquetReadObjects({ file });
  return objects.map((o) => {
    // hyparquet leaves a null optional column out of the object.
    const row = { ...COLUMN_DEFAULTS, ...(o as unknown as ShardRow) };
    row.reward ??= null;
    row.finish_reason ??= null;
    row.policy_version ??= null;
    row.response_logprobs ??= null;
    return row;
  });
}

/** Reads a JSONL shard; throws naming the line that is not a JSON object. */
export function readShardJsonl(text: string): ShardRow[] {
  const rows: ShardRow[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      rows.push({ ...COLUMN_DEFAULTS, ...(JSON.parse(line) as ShardRow) });
    } catch (err) {
      throw new Error(`line ${i + 1}: not JSON (${(err as Error).message})`);
    }
  });
  return rows;
}

import { parquetReadObjects } from "hyparquet";
import type { ShardRow } from "./shard-rows.ts";

/** Reads a Parquet shard back into rows (for `polar inspect` and tests). */
export async function readShardParquet(bytes: Uint8Array): Promise<ShardRow[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const objects = await parquetReadObjects({ file });
  return objects.map((o) => ({
    ...(o as unknown as ShardRow),
    // hyparquet leaves a null optional column out of the object.
    reward: (o.reward as number | undefined) ?? null,
    finish_reason: (o.finish_reason as string | undefined) ?? null,
    policy_version: (o.policy_version as string | undefined) ?? null,
    response_logprobs: (o.response_logprobs as number[] | undefined) ?? null,
  }));
}

/** Reads a JSONL shard; throws naming the line that is not a JSON object. */
export function readShardJsonl(text: string): ShardRow[] {
  const rows: ShardRow[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      rows.push(JSON.parse(line) as ShardRow);
    } catch (err) {
      throw new Error(`line ${i + 1}: not JSON (${(err as Error).message})`);
    }
  });
  return rows;
}

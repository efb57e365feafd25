import { parquetWriteBuffer } from "hyparquet-writer";
import type { ShardRow } from "./shard-rows.ts";

type SchemaElement = NonNullable<Parameters<typeof parquetWriteBuffer>[0]["schema"]>[number];

/** A standard 3-level LIST (`name { repeated group list { required element } }`), as Arrow/Spark write it. */
function list(name: string, element: Omit<SchemaElement, "name">, nullable: boolean): SchemaElement[] {
  return [
    { name, repetition_type: nullable ? "OPTIONAL" : "REQUIRED", converted_type: "LIST", num_children: 1 },
    { name: "list", repetition_type: "REPEATED", num_children: 1 },
    { name: "element", repetition_type: "REQUIRED", ...element },
  ];
}

const required = "REQUIRED" as const;
const optional = "OPTIONAL" as const;
const utf8 = { type: "BYTE_ARRAY", converted_type: "UTF8" } as const;

// loss_mask is INT32 storage annotated INT_8, the Parquet form of int8. Only the converted type is
// set: hyparquet-writer 0.17 serializes the INTEGER logical type's bitWidth with the wrong thrift
// type, which Arrow readers reject; every reader derives int8 from INT_8 alone.
const columns: SchemaElement[] = [
  { name: "task_id", repetition_type: required, ...utf8 },
  { name: "session_id", repetition_type: required, ...utf8 },
  { name: "sample_index", repetition_type: required, type: "INT32" },
  { name: "trace_index", repetition_type: required, type: "INT32" },
  { name: "group_id", repetition_type: required, ...utf8 },
  { name: "status", repetition_type: required, ...utf8 },
  { name: "reward", repetition_type: optional, type: "DOUBLE" },
  { name: "finish_reason", repetition_type: optional, ...utf8 },
  ...list("prompt_ids", { type: "INT32" }, false),
  ...list("response_ids", { type: "INT32" }, false),
  ...list("loss_mask", { type: "INT32", converted_type: "INT_8" }, false),
  ...list("response_logprobs", { type: "FLOAT" }, true),
  { name: "policy_version", repetition_type: optional, ...utf8 },
  { name: "metadata", repetition_type: required, ...utf8 },
  { name: "policy_version_end", repetition_type: optional, ...utf8 },
  { name: "orphan", repetition_type: required, type: "BOOLEAN" },
  { name: "orphan_reason", repetition_type: optional, ...utf8 },
  { name: "break_reason", repetition_type: optional, ...utf8 },
  { name: "parent_trace", repetition_type: optional, type: "INT32" },
  { name: "crossed_weight_update", repetition_type: required, type: "BOOLEAN" },
  { name: "capture_gaps", repetition_type: required, type: "INT32" },
  { name: "version_spans", repetition_type: required, ...utf8 },
  { name: "parent_tool_call_id", repetition_type: optional, ...utf8 },
  { name: "step_rewards", repetition_type: optional, ...utf8 },
  ...list("image_hashes", utf8, false),
];

const COLUMN_NAMES = [
  "task_id",
  "session_id",
  "sample_index",
  "trace_index",
  "group_id",
  "status",
  "reward",
  "finish_reason",
  "prompt_ids",
  "response_ids",
  "loss_mask",
  "response_logprobs",
  "policy_version",
  "metadata",
  "policy_version_end",
  "orphan",
  "orphan_reason",
  "break_reason",
  "parent_trace",
  "crossed_weight_update",
  "capture_gaps",
  "version_spans",
  "parent_tool_call_id",
  "step_rewards",
  "image_hashes",
] as const satisfies readonly (keyof ShardRow)[];

export const SHARD_SCHEMA: SchemaElement[] = [
  { name: "root", num_children: COLUMN_NAMES.length },
  ...columns,
];

/**
 * The group shard as Parquet bytes. Deterministic: the writer puts no timestamp in the file,
 * and the row group size is fixed (a trace can hold tens of thousands of tokens, so groups are
 * kept small enough for a reader to hold one in memory).
 */
export function encodeShardParquet(rows: readonly ShardRow[]): Uint8Array {
  if (rows.length === 0) {
    // hyparquet-writer 0.17 writes the empty row-group list with element type BYTE; Arrow rejects it.
    throw new RangeError(
      "a Parquet shard needs at least one row (an empty one would be unreadable by Arrow)",
    );
  }
  const buffer = parquetWriteBuffer({
    columnData: COLUMN_NAMES.map((name) => ({ name, data: rows.map((r) => r[name]) })),
    schema: SHARD_SCHEMA,
    rowGroupSize: 256,
    createdBy: "polar",
    kvMetadata: [{ key: "polar.shard.version", value: "1" }],
  });
  return new Uint8Array(buffer);
}

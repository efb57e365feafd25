import { tableFromIPC } from "apache-arrow";
import { parquetMetadata } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";
import * as parquetWasm from "parquet-wasm";
import { describe, expect, it } from "vitest";
import { encodeShardJsonl } from "../../batch-runner/shards/jsonl.ts";
import { encodeShardParquet, SHARD_SCHEMA } from "../../batch-runner/shards/parquet-writer.ts";
import { readShardJsonl, readShardParquet } from "../../batch-runner/shards/read-shard.ts";
import { type ShardRow, shardRows } from "../../batch-runner/shards/shard-rows.ts";
import { ShardInputError, writeGroupShard } from "../../batch-runner/shards/write-group-shard.ts";
import { keys } from "../../shared/keys.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";
import { sessionResult } from "../support/reconstruction-results.ts";

const TASK = "task-shard";

/** Three sessions: a two-chain session with a reward, one with a missing logprob, one that errored with no trace. */
function results(): SessionResult[] {
  const s = (id: string) => ({ session_id: id, task_id: TASK });
  const a1 = capture([1, 2, 3], [10, 11, IM_END], { ...s("s-a"), policy_version: "3" });
  const a2 = capture([1, 2, 3, 10, 11, IM_END, 198, 20], [12, IM_END], { ...s("s-a"), policy_version: "4" });
  const a3 = capture([500, 501], [502], { ...s("s-a"), finish_reason: "length", logprobs: [-1.1] });
  const b1 = capture([1, 2, 3], [30, IM_END], { ...s("s-b") });
  const b2 = capture([1, 2, 3, 30, IM_END, 198, 21], [31, 32], { ...s("s-b"), logprobs: null });
  return [
    sessionResult(TASK, "s-b", 1, [b1, b2]),
    sessionResult(TASK, "s-a", 0, [a1, a2, a3], { reward: 0.75 }),
    sessionResult(TASK, "s-c", 2, [], { status: "ERROR" }),
  ];
}

/** Arrow (Rust parquet via parquet-wasm) view of a shard: an independent second reader. */
function readWithArrow(bytes: Uint8Array) {
  const table = tableFromIPC(parquetWasm.readParquet(bytes).intoIPCStream());
  const types = Object.fromEntries(table.schema.fields.map((f) => [f.name, String(f.type)]));
  const plain = (v: unknown): unknown =>
    v !== null && typeof v === "object" && "toArray" in v
      ? [...(v as unknown as Iterable<unknown>)].map(plain)
      : v;
  const rows = table
    .toArray()
    .map((r) => Object.fromEntries(Object.entries(r.toJSON()).map(([k, v]) => [k, plain(v)])));
  return { types, rows };
}

/** What a reader must give back: logprobs are stored as float32. */
function expected(rows: ShardRow[]) {
  return rows.map((r) => ({
    ...r,
    response_logprobs: r.response_logprobs === null ? null : r.response_logprobs.map(Math.fround),
  }));
}

describe("shard rows", () => {
  it("has one row per trace, sorted by sample_index, with the trace's data", () => {
    const rows = shardRows(results());
    expect(rows.map((r) => [r.session_id, r.trace_index])).toEqual([
      ["s-a", 0],
      ["s-a", 1],
      ["s-b", 0],
    ]);
    expect(rows[0]).toMatchObject({ group_id: TASK, reward: 0.75, policy_version: "3", status: "COMPLETED" });
    expect(rows[0].loss_mask).toEqual([1, 1, 1, 0, 0, 1, 1]);
    expect(JSON.parse(rows[0].metadata)).toMatchObject({ policy_versions: ["3", "4"], attempt: 0, turns: 2 });
    expect(rows[1]).toMatchObject({ finish_reason: "length", response_logprobs: [-1.1] });
    expect(rows[2].response_logprobs).toBeNull();
    expect(rows[2].reward).toBeNull();
  });
});

describe("parquet shard", () => {
  const rows = shardRows(results());
  const bytes = encodeShardParquet(rows);

  it("reads back every column with hyparquet", async () => {
    expect(await readShardParquet(bytes)).toEqual(expected(rows));
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    expect(meta.key_value_metadata).toEqual([{ key: "polar.shard.version", value: "1" }]);
    expect(meta.created_by).toBe("polar");
  });

  it("reads back every column, with list<int32>/list<int8>/list<float32> types, with parquet-wasm (Arrow)", () => {
    const { types, rows: read } = readWithArrow(bytes);
    expect(types).toMatchObject({
      prompt_ids: "List<Int32>",
      response_ids: "List<Int32>",
      loss_mask: "List<Int8>",
      response_logprobs: "List<Float32>",
      sample_index: "Int32",
      reward: "Float64",
      metadata: "Utf8",
    });
    expect(read).toEqual(expected(rows));
  });

  it("has the same bytes whatever order the results come in", () => {
    const base = results();
    const forward = encodeShardParquet(shardRows(base));
    const again = encodeShardParquet(shardRows([base[2], base[0], base[1]]));
    expect(Buffer.from(again).equals(Buffer.from(forward))).toBe(true);
    expect(encodeShardJsonl(shardRows([...base].reverse()))).toBe(encodeShardJsonl(shardRows(base)));
  });

  it("refuses to write an empty shard (it would be unreadable by Arrow)", () => {
    expect(() => encodeShardParquet([])).toThrow(RangeError);
  });
});

describe("jsonl shard", () => {
  it("holds the same rows, one per line", () => {
    const rows = shardRows(results());
    const text = encodeShardJsonl(rows);
    expect(text.split("\n")).toHaveLength(rows.length + 1);
    expect(readShardJsonl(text)).toEqual(rows);
    expect(() => readShardJsonl(`${text}{oops\n`)).toThrow(/line 4/);
  });
});

describe("writeGroupShard", () => {
  const put = (store: MemoryStore, r: SessionResult) =>
    store.put(keys.result(r.task_id, r.session_id), JSON.stringify(r));

  it("returns null until every sample has a result, then writes both forms", async () => {
    const store = new MemoryStore();
    const [b, a, c] = results();
    const task = { task_id: TASK, num_samples: 3 };
    await put(store, a);
    await put(store, b);
    expect(await writeGroupShard({ store, task })).toBeNull();
    expect(await store.get(keys.shard(TASK))).toBeNull();
    await put(store, c);
    const written = await writeGroupShard({ store, task });
    expect(written).toEqual({ key: keys.shard(TASK), jsonlKey: keys.shardJsonl(TASK), rows: 3, sessions: 3 });
    const parquet = (await store.get(keys.shard(TASK))) as Uint8Array;
    expect(Buffer.from(parquet).equals(Buffer.from(encodeShardParquet(shardRows([a, b, c]))))).toBe(true);
    const jsonl = new TextDecoder().decode((await store.get(keys.shardJsonl(TASK))) as Uint8Array);
    expect(readShardJsonl(jsonl).map((r) => r.session_id)).toEqual(["s-a", "s-a", "s-b"]);
  });

  it("writes only the JSONL twin when no session produced a trace", async () => {
    const store = new MemoryStore();
    const [, , errored] = results();
    await put(store, errored);
    const written = await writeGroupShard({ store, task: { task_id: TASK, num_samples: 1 } });
    expect(written).toMatchObject({ key: null, rows: 0, sessions: 1 });
    expect(await store.get(keys.shard(TASK))).toBeNull();
    expect(await store.get(keys.shardJsonl(TASK))).toEqual(new Uint8Array());
  });

  it("names the result that is not a SessionResult", async () => {
    const store = new MemoryStore();
    await store.put(keys.result(TASK, "s-x"), JSON.stringify({ v: 1, task_id: TASK }));
    const err = await writeGroupShard({ store, task: { task_id: TASK, num_samples: 1 } }).catch((e) => e);
    expect(err).toBeInstanceOf(ShardInputError);
    expect(err.message).toContain("results/task-shard/s-x.json");
  });
});

describe("faithfulness columns", () => {
  /** A session with a retried call (an orphan, a break) and a turn that crossed a weight update. */
  function faithfulResult(): SessionResult {
    const s = { session_id: "s-f", task_id: TASK };
    const a1 = capture([1, 2], [3, IM_END], { ...s, policy_version: "1", policy_version_end: "2" });
    const a2 = capture([1, 2, 3, IM_END, 4], [50, IM_END], {
      ...s,
      policy_version: "2",
      policy_version_end: "2",
    });
    const retry = capture([1, 2, 3, IM_END, 4], [5, IM_END], {
      ...s,
      policy_version: "2",
      policy_version_end: "3",
    });
    return sessionResult(TASK, "s-f", 0, [a1, a2, retry]);
  }

  it("are in the rows and read back from Parquet (both readers) and JSONL", async () => {
    const rows = shardRows([faithfulResult()]);
    expect(
      rows.map((r) => [r.orphan, r.orphan_reason, r.break_reason, r.parent_trace, r.capture_gaps]),
    ).toEqual([
      [false, null, null, null, 0],
      [true, "retried", "retry", 0, 0],
    ]);
    expect(rows[0]).toMatchObject({
      policy_version: "1",
      policy_version_end: "3",
      crossed_weight_update: true,
    });
    expect(JSON.parse(rows[1].metadata)).toMatchObject({
      break_position: 5,
      break_context_ids: [1, 2, 3, IM_END, 4],
    });
    expect(JSON.parse(rows[0].metadata).break_position).toBeUndefined();
    expect(JSON.parse(rows[0].version_spans)).toEqual([
      { start: 0, end: 2, version_start: "1", version_end: "2" },
      { start: 3, end: 5, version_start: "2", version_end: "3" },
    ]);
    const bytes = encodeShardParquet(rows);
    expect(await readShardParquet(bytes)).toEqual(expected(rows));
    const { types, rows: arrow } = readWithArrow(bytes);
    expect(types).toMatchObject({
      orphan: "Bool",
      orphan_reason: "Utf8",
      break_reason: "Utf8",
      parent_trace: "Int32",
      crossed_weight_update: "Bool",
      capture_gaps: "Int32",
      version_spans: "Utf8",
      policy_version_end: "Utf8",
    });
    expect(arrow).toEqual(expected(rows));
    expect(readShardJsonl(encodeShardJsonl(rows))).toEqual(rows);
  });

  it("get their defaults when a shard written before them is read", async () => {
    const rows = shardRows(results());
    // The columns of `polar.shard.version = 1` before issue 13.
    const oldNames = [
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
    ] as const;
    const last = SHARD_SCHEMA.findIndex((e) => e.name === "metadata");
    const old = parquetWriteBuffer({
      columnData: oldNames.map((name) => ({ name, data: rows.map((r) => r[name]) })),
      schema: [{ name: "root", num_children: 14 }, ...SHARD_SCHEMA.slice(1, last + 1)],
    });
    const defaults = {
      orphan: false,
      orphan_reason: null,
      break_reason: null,
      parent_trace: null,
      crossed_weight_update: false,
      capture_gaps: 0,
      version_spans: "[]",
      policy_version_end: null,
    };
    const read = await readShardParquet(new Uint8Array(old));
    expect(read.map((r) => ({ ...r, ...defaults }))).toEqual(read);
    expect(read.map((r) => r.session_id)).toEqual(rows.map((r) => r.session_id));
    const line = JSON.stringify(Object.fromEntries(oldNames.map((n) => [n, rows[0][n]])));
    expect(readShardJsonl(`${line}\n`)[0]).toMatchObject(defaults);
  });
});

describe("step_rewards column", () => {
  it("carries the evaluator's per-turn rewards as spans (both readers, JSONL) and null without them", async () => {
    const result = results()[1];
    const [first, ...rest] = result.trajectory.traces;
    const spans = [
      { start: 0, end: 2, reward: 1 },
      { start: 3, end: 4, reward: 0 },
    ];
    const rows = shardRows([
      {
        ...result,
        trajectory: { ...result.trajectory, traces: [{ ...first, step_rewards: spans }, ...rest] },
      },
    ]);
    expect(JSON.parse(rows[0].step_rewards ?? "null")).toEqual(spans);
    expect(rows[1].step_rewards).toBeNull();
    const bytes = encodeShardParquet(rows);
    expect(await readShardParquet(bytes)).toEqual(expected(rows));
    const { types, rows: arrow } = readWithArrow(bytes);
    expect(types.step_rewards).toBe("Utf8");
    expect(arrow.map((r) => r.step_rewards)).toEqual(rows.map((r) => r.step_rewards));
    expect(readShardJsonl(encodeShardJsonl(rows))).toEqual(rows);
  });

  it("reads null from a shard written before the column", async () => {
    const rows = shardRows(results());
    const read = await readShardParquet(shardBefore("step_rewards", rows));
    expect(read.map((r) => r.step_rewards)).toEqual(rows.map(() => null));
    expect(read.map((r) => r.session_id)).toEqual(rows.map((r) => r.session_id));
  });
});

describe("image_hashes column", () => {
  const H = ["a".repeat(64), "b".repeat(64)];
  it("carries each trace's image hashes in order (both readers, Arrow as list<utf8>)", async () => {
    const all = results();
    const traces = all[0].trajectory.traces;
    traces[0] = { ...traces[0], image_hashes: [H[1], H[0], H[1]] };
    const rows = shardRows(all);
    expect(rows.map((r) => r.image_hashes.length).sort()).toEqual([...rows.map(() => 0).slice(1), 3]);
    expect(rows.find((r) => r.image_hashes.length > 0)?.image_hashes).toEqual([H[1], H[0], H[1]]);
    const bytes = encodeShardParquet(rows);
    expect(await readShardParquet(bytes)).toEqual(expected(rows));
    const { types, rows: arrow } = readWithArrow(bytes);
    expect(types.image_hashes).toBe("List<Utf8>");
    expect(arrow.map((r) => r.image_hashes)).toEqual(rows.map((r) => r.image_hashes));
    expect(readShardJsonl(encodeShardJsonl(rows))).toEqual(rows);
  });

  it("reads [] from a shard written before the column", async () => {
    const rows = shardRows(results());
    const read = await readShardParquet(shardBefore("image_hashes", rows));
    expect(read.map((r) => r.image_hashes)).toEqual(rows.map(() => []));
  });
});

/** The shard as written before `column` and every column after it existed. */
function shardBefore(column: keyof ShardRow, rows: ShardRow[]): Uint8Array {
  const cut = SHARD_SCHEMA.findIndex((e) => e.name === column);
  const schema = SHARD_SCHEMA.slice(1, cut);
  const names = schema
    .map((e) => e.name)
    .filter((n) => n !== "list" && n !== "element") as (keyof ShardRow)[];
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: names.map((name) => ({ name, data: rows.map((r) => r[name]) })),
      schema: [{ name: "root", num_children: names.length }, ...schema],
    }),
  );
}

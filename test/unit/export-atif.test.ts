import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { encodeShardJsonl } from "../../batch-runner/shards/jsonl.ts";
import { shardRows } from "../../batch-runner/shards/shard-rows.ts";
import { maskRuns, toAtif } from "../../export/atif.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";
import { sessionResult } from "../support/reconstruction-results.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

// ATIF v1.5 as harbor-framework/harbor docs/rfcs/0001-trajectory-format.md defines it (root,
// AgentSchema, StepObject, ObservationSchema, MetricsSchema, FinalMetricsSchema), strict: a field the
// RFC does not define fails the parse.
const Metrics = z.strictObject({
  prompt_tokens: z.number().int().optional(),
  completion_tokens: z.number().int().optional(),
  cached_tokens: z.number().int().optional(),
  cost_usd: z.number().optional(),
  prompt_token_ids: z.array(z.number().int()).optional(),
  completion_token_ids: z.array(z.number().int()).optional(),
  logprobs: z.array(z.number()).optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
});
const Step = z.strictObject({
  step_id: z.number().int().min(1),
  timestamp: z.string().optional(),
  source: z.enum(["system", "user", "agent"]),
  model_name: z.string().optional(),
  reasoning_effort: z.union([z.string(), z.number()]).optional(),
  message: z.string(),
  reasoning_content: z.string().optional(),
  tool_calls: z
    .array(
      z.strictObject({
        tool_call_id: z.string(),
        function_name: z.string(),
        arguments: z.record(z.string(), z.unknown()),
      }),
    )
    .optional(),
  observation: z
    .strictObject({
      results: z.array(
        z.strictObject({
          source_call_id: z.string().nullable().optional(),
          content: z.string().optional(),
          subagent_trajectory_ref: z.array(z.unknown()).optional(),
        }),
      ),
    })
    .optional(),
  metrics: Metrics.optional(),
  is_copied_context: z.boolean().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
});
const Atif = z.strictObject({
  schema_version: z.literal("ATIF-v1.5"),
  session_id: z.string(),
  agent: z.strictObject({
    name: z.string(),
    version: z.string(),
    model_name: z.string().optional(),
    tool_definitions: z.array(z.record(z.string(), z.unknown())).optional(),
    extra: z.record(z.string(), z.unknown()).optional(),
  }),
  steps: z.array(Step).min(1),
  notes: z.string().optional(),
  final_metrics: z
    .strictObject({
      total_prompt_tokens: z.number().int().optional(),
      total_completion_tokens: z.number().int().optional(),
      total_cached_tokens: z.number().int().optional(),
      total_cost_usd: z.number().optional(),
      total_steps: z.number().int().optional(),
      extra: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
});

/** Two sessions; s-a has two traces (the second one a new chain), s-b one trace. */
function rows() {
  const s = (id: string) => ({ session_id: id, task_id: "t" });
  const a1 = capture([1, 2, 3], [10, 11, IM_END], { ...s("s-a"), logprobs: [-0.1, -0.2, -0.3] });
  const a2 = capture([1, 2, 3, 10, 11, IM_END, 198, 20], [12, IM_END], {
    ...s("s-a"),
    logprobs: [-0.4, -0.5],
  });
  const a3 = capture([500, 501], [502], { ...s("s-a"), logprobs: [-1.1] });
  const b1 = capture([1, 2, 3], [30, IM_END], { ...s("s-b"), logprobs: [-0.6, -0.7] });
  return shardRows([
    sessionResult("t", "s-a", 0, [a1, a2, a3], { reward: 0.75 }),
    sessionResult("t", "s-b", 1, [b1], { reward: 0 }),
  ]);
}

describe("ATIF export", () => {
  it("cuts a trace at every mask change", () => {
    expect(maskRuns([0, 1, 1, 0, 0, 1])).toEqual([
      [0, 1, 0],
      [1, 3, 1],
      [3, 5, 0],
      [5, 6, 1],
    ]);
    expect(maskRuns([])).toEqual([]);
  });

  it("gives each sampled run its exact prompt, completion and logprobs", () => {
    const input = rows();
    const out = toAtif(input, { agentName: "polar", agentVersion: "0.1.0" });
    expect(out.map((t) => t.session_id)).toEqual(["s-a", "s-b"]);
    for (const t of out) expect(Atif.safeParse(t).error).toBeUndefined();
    for (const t of out) {
      const traces = input.filter((r) => r.session_id === t.session_id);
      const agentSteps = t.steps.filter((s) => s.source === "agent");
      // Every trainable token appears exactly once, as a completion, with its own logprob.
      const trainable = traces.flatMap((r) => r.response_ids.filter((_, i) => r.loss_mask[i] === 1));
      expect(agentSteps.flatMap((s) => s.metrics?.completion_token_ids)).toEqual(trainable);
      const trainableLp = traces.flatMap((r) =>
        (r.response_logprobs ?? []).filter((_, i) => r.loss_mask[i] === 1),
      );
      expect(agentSteps.flatMap((s) => s.metrics?.logprobs)).toEqual(trainableLp);
      for (const step of agentSteps) {
        const polar = step.extra?.polar as { trace_index: number; response_start: number };
        const row = traces[polar.trace_index];
        const ids = step.metrics?.completion_token_ids ?? [];
        // The prompt of a turn is the trace prompt plus everything before the run: what the engine saw.
        expect(step.metrics?.prompt_token_ids).toEqual([
          ...row.prompt_ids,
          ...row.response_ids.slice(0, polar.response_start),
        ]);
        expect(row.response_ids.slice(polar.response_start, polar.response_start + ids.length)).toEqual(ids);
        expect(
          row.loss_mask.slice(polar.response_start, polar.response_start + ids.length).every((m) => m === 1),
        ).toBe(true);
      }
      expect(t.steps.map((s) => s.step_id)).toEqual(t.steps.map((_, i) => i + 1));
    }
    const [a] = out;
    // s-a: trace 0 = prompt, turn, observation (198, 20), turn; trace 1 = prompt, turn.
    expect(a.steps.map((s) => s.source)).toEqual(["user", "agent", "agent", "user", "agent"]);
    expect(a.steps[1].observation).toEqual({ results: [{ content: "" }] });
    expect(a.final_metrics.extra).toEqual({ reward: 0.75, status: "COMPLETED" });
    expect((a.extra.polar as { traces: number }).traces).toBe(2);
  });

  it("carries the orphan flag and break reason of each trace, defaulting them for older shards", () => {
    const [first, second, ...rest] = rows();
    expect(second.trace_index).toBe(1);
    const flagged = { ...first, orphan: true, orphan_reason: "no_chain", break_reason: "compaction" };
    const out = toAtif([flagged, second, ...rest], { agentName: "polar", agentVersion: "0.1.0" });
    const polarOf = (t: (typeof out)[number], i: number) =>
      t.steps[i].extra?.polar as Record<string, unknown>;
    expect(polarOf(out[0], 1)).toMatchObject({
      orphan: true,
      orphan_reason: "no_chain",
      break_reason: "compaction",
    });
    // The second trace is a new chain: the reconstruction's own break reason comes through.
    expect(polarOf(out[0], 4)).toMatchObject({
      orphan: second.orphan,
      break_reason: second.break_reason,
      parent_trace: second.parent_trace,
    });
    expect(second.break_reason).not.toBeNull();
    // A row from a shard written before these columns existed reads as the defaults.
    const old: Record<string, unknown> = { ...first };
    for (const k of [
      "orphan",
      "orphan_reason",
      "break_reason",
      "parent_trace",
      "crossed_weight_update",
      "capture_gaps",
    ]) {
      delete old[k];
    }
    const [fromOld] = toAtif([old as unknown as typeof first], { agentName: "polar", agentVersion: "0.1.0" });
    expect(polarOf(fromOld, 1)).toMatchObject({
      orphan: false,
      orphan_reason: null,
      break_reason: null,
      parent_trace: null,
      crossed_weight_update: false,
      capture_gaps: 0,
    });
  });
});

describe("polar export --format atif", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "polar-export-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const polar = (...args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, "bin/polar.js"), "export", ...args], { encoding: "utf8" });

  it("writes one trajectory per session, decoded or not", async () => {
    const shard = join(dir, "t.jsonl");
    await writeFile(shard, encodeShardJsonl(rows()));
    const plain = polar("--format", "atif", shard, "--no-text");
    expect(plain.status, plain.stderr).toBe(0);
    const lines = plain.stdout
      .trim()
      .split("\n")
      .map((l) => Atif.parse(JSON.parse(l)));
    expect(lines.map((t) => t.session_id)).toEqual(["s-a", "s-b"]);
    expect(lines.flatMap((t) => t.steps.map((s) => s.message))).toEqual(
      lines.flatMap((t) => t.steps.map(() => "")),
    );

    const out = join(dir, "atif");
    const decoded = polar("--format", "atif", shard, "--out", out, "--model", "qwen3");
    expect(decoded.status, decoded.stderr).toBe(0);
    const b = Atif.parse(JSON.parse(await readFile(join(out, "s-b.json"), "utf8")));
    expect(b.agent).toEqual({ name: "polar", version: expect.any(String), model_name: "qwen3" });
    // No chat-template tokens in any message (these ids are not a chat: the turns stand alone).
    for (const t of [b]) for (const s of t.steps) expect(s.message).not.toMatch(/<\|im_(start|end)\|>/);
    expect(
      b.steps.filter((s) => s.source === "agent").flatMap((s) => s.metrics?.completion_token_ids),
    ).toEqual([30, IM_END]);
  });

  it("refuses an unknown format and a file it cannot read", () => {
    const wrong = polar("--format", "sharegpt", "x.jsonl");
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/--format must be atif/);
    const missing = polar("--format", "atif", join(dir, "nope.parquet"));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/cannot read/);
    // No --format, or a store directory instead of a file: said plainly, not `got null` / EISDIR.
    const none = polar(join(dir, "nope.parquet"));
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--format is required/);
    const directory = polar("--format", "atif", dir);
    expect(directory.status).toBe(2);
    expect(directory.stderr).toMatch(/is a directory: export takes one result/);
  });
});

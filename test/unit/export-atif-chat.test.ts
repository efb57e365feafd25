import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ShardRow } from "../../batch-runner/shards/shard-rows.ts";
import { type AtifTrajectory, toAtif } from "../../export/atif.ts";
import { loadInspectable } from "../../inspect/load-inspectable.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import { harborPython } from "../support/harbor-venv.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** A shard from a real `polar run` (python/tests/fixtures/step-rewards/make.sh): two tool calls, one failing, then an answer. */
const SHARD = join(ROOT, "python/tests/fixtures/step-rewards/steps.parquet");
const qwen = loadQwen3();
const TEMPLATE = /<\|im_(start|end)\|>|<tool_call>|<tool_response>/;

/** A one-trace row from a chat: `turns` are [sampled, inserted-after] text pairs after the rendered prompt. */
function chatRow(prompt: string, turns: [string, string][]): ShardRow {
  const response: number[] = [];
  const mask: number[] = [];
  const spans: { start: number; end: number; version_start: null; version_end: null }[] = [];
  for (const [sampled, inserted] of turns) {
    const s = qwen.encode(sampled);
    spans.push({
      start: response.length,
      end: response.length + s.length,
      version_start: null,
      version_end: null,
    });
    const i = qwen.encode(inserted);
    response.push(...s, ...i);
    mask.push(...s.map(() => 1), ...i.map(() => 0));
  }
  return {
    task_id: "t",
    session_id: "s",
    sample_index: 0,
    trace_index: 0,
    group_id: "t",
    status: "COMPLETED",
    reward: 1,
    finish_reason: "stop",
    prompt_ids: qwen.encode(prompt),
    response_ids: response,
    loss_mask: mask,
    response_logprobs: mask.map((m, k) => (m ? -k / 100 : 0)),
    policy_version: null,
    policy_version_end: null,
    metadata: "{}",
    orphan: false,
    orphan_reason: null,
    break_reason: null,
    parent_trace: null,
    parent_tool_call_id: null,
    crossed_weight_update: false,
    capture_gaps: 0,
    version_spans: JSON.stringify(spans),
    step_rewards: null,
    image_hashes: [],
  };
}

const TOOLS = [
  {
    type: "function" as const,
    function: {
      name: "read",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } } },
    },
  },
];

function trainableOnce(t: AtifTrajectory, rows: ShardRow[]) {
  const agent = t.steps.filter((s) => s.metrics);
  expect(agent.flatMap((s) => s.metrics?.completion_token_ids)).toEqual(
    rows.flatMap((r) => r.response_ids.filter((_, i) => r.loss_mask[i] === 1)),
  );
  expect(agent.flatMap((s) => s.metrics?.logprobs)).toEqual(
    rows.flatMap((r) => (r.response_logprobs ?? []).filter((_, i) => r.loss_mask[i] === 1)),
  );
}

describe("ATIF export read as a chat", () => {
  it("gives system, user and agent steps in plain text, tool calls with their results, tokens in metrics", () => {
    const prompt = qwen.renderChat(
      [
        { role: "system", content: "You are terse." },
        { role: "user", content: "What is in a.txt?" },
      ],
      { tools: TOOLS },
    );
    const row = chatRow(prompt, [
      [
        '<think>\nRead it.\n</think>\n\nLooking.\n<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call><|im_end|>',
        "\n<|im_start|>user\n<tool_response>\nhello\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
      ],
      ["It says hello.<|im_end|>", ""],
    ]);
    const [t] = toAtif([row], { agentName: "polar", agentVersion: "0", chat: qwen });
    expect(t.schema_version).toBe("ATIF-v1.5");
    expect(t.agent.tool_definitions).toEqual([TOOLS[0]]);
    expect(t.steps.map((s) => [s.source, s.message])).toEqual([
      ["system", "You are terse."],
      ["user", "What is in a.txt?"],
      ["agent", "Looking."],
      ["agent", "It says hello."],
    ]);
    const call = t.steps[2];
    expect(call.reasoning_content).toBe("Read it.");
    expect(call.tool_calls).toEqual([
      { tool_call_id: "call_0_2_0", function_name: "read", arguments: { path: "a.txt" } },
    ]);
    expect(call.observation).toEqual({ results: [{ source_call_id: "call_0_2_0", content: "hello" }] });
    trainableOnce(t, [row]);
    // A turn's prompt is everything the engine saw before it.
    expect(t.steps[3].metrics?.prompt_token_ids).toEqual([
      ...row.prompt_ids,
      ...row.response_ids.slice(
        0,
        (t.steps[3].extra as { polar: { response_start: number } }).polar.response_start,
      ),
    ]);
  });

  it("marks history the policy did not sample in this trace as copied context, without metrics", () => {
    const prompt = qwen.renderChat([
      { role: "user", content: "hi" },
      { role: "assistant", content: "Hello." },
      { role: "user", content: "again" },
    ]);
    const [t] = toAtif([chatRow(prompt, [["Hello again.<|im_end|>", ""]])], {
      agentName: "p",
      agentVersion: "0",
      chat: qwen,
    });
    expect(
      t.steps.map((s) => [s.source, s.message, s.is_copied_context ?? false, s.metrics !== undefined]),
    ).toEqual([
      ["user", "hi", false, false],
      ["agent", "Hello.", true, false],
      ["user", "again", false, false],
      ["agent", "Hello again.", false, true],
    ]);
  });

  describe("on a real run's shard, validated by harbor's own ATIF models", () => {
    let dir: string;
    let rows: ShardRow[];
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "polar-atif-harbor-"));
      rows = (await loadInspectable(SHARD)).rows;
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it("reads the tool calls and their results out of the tokens", () => {
      const out = toAtif(rows, { agentName: "polar", agentVersion: "0", chat: qwen });
      expect(out).toHaveLength(2);
      for (const t of out) {
        trainableOnce(
          t,
          rows.filter((r) => r.session_id === t.session_id),
        );
        for (const s of t.steps) {
          expect(s.message).not.toMatch(TEMPLATE);
          for (const r of s.observation?.results ?? []) expect(r.content).not.toMatch(TEMPLATE);
        }
        const calls = t.steps.flatMap((s) => s.tool_calls ?? []);
        expect(calls.map((c) => c.arguments)).toEqual([
          { command: "echo hi > hello.txt" },
          { command: "cat missing.txt" },
        ]);
        const results = t.steps.flatMap((s) => s.observation?.results ?? []);
        expect(results.map((r) => r.source_call_id)).toEqual(calls.map((c) => c.tool_call_id));
        expect(results[1].content).toContain("(exit 1)");
        expect(t.agent.tool_definitions?.map((d) => (d.function as { name: string }).name)).toEqual(["bash"]);
      }
    });

    const harbor = harborPython();
    it.skipIf(harbor.problem !== null)(
      "`polar export --format atif` output passes harbor.models.trajectories.Trajectory",
      async () => {
        if (harbor.problem !== null) return;
        const out = join(dir, "atif");
        const res = spawnSync(
          process.execPath,
          [join(ROOT, "bin/polar.js"), "export", "--format", "atif", SHARD, "--out", out],
          {
            encoding: "utf8",
          },
        );
        expect(res.status, res.stderr).toBe(0);
        const files = ["steps-0.json", "steps-1.json"].map((f) => join(out, f));
        const check = `
import json, sys
from harbor.models.trajectories import Trajectory
for path in sys.argv[1:]:
    t = Trajectory.model_validate(json.load(open(path)))
    calls = [c.function_name for s in t.steps for c in (s.tool_calls or [])]
    print(json.dumps({"steps": len(t.steps), "calls": calls, "version": t.schema_version}))
`;
        const py = spawnSync(harbor.python, ["-c", check, ...files], { encoding: "utf8" });
        expect(py.status, py.stderr).toBe(0);
        const seen = py.stdout
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        expect(seen).toEqual(files.map(() => ({ steps: 4, calls: ["bash", "bash"], version: "ATIF-v1.5" })));
        // And it fails what it must: a result naming a tool call that does not exist.
        const bad = JSON.parse(await readFile(files[0], "utf8"));
        bad.steps[1].observation.results[0].source_call_id = "nope";
        await writeFile(join(dir, "bad.json"), JSON.stringify(bad));
        const refused = spawnSync(harbor.python, ["-c", check, join(dir, "bad.json")], { encoding: "utf8" });
        expect(refused.status).not.toBe(0);
        expect(refused.stderr).toContain("source_call_id 'nope'");
      },
    );
  });
});

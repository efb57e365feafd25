import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ecosystemVenv, ROOT } from "../support/ecosystem-venv.ts";
import { type PolarServe, startPolarServe } from "../support/polar-serve.ts";

/**
 * NeMo Gym's own rollout collection (`ng_collect_rollouts`, nemo-gym 0.4.0) pointed at Polar's
 * NeMo Gym agent server (`python -m polar_rollouts.nemo_gym`), which runs each row as one
 * session of `polar serve` (dry-run policy, the shell harness with examples/agents/mini-agent.mjs).
 * The rows that come back must carry the shard's reward and its tokens, call by call, and pass
 * NeMo Gym's own `BaseVerifyResponse` model.
 */
const venv = await ecosystemVenv("nemo-gym");
if (!venv.ok) console.warn(`skipping the NeMo Gym test: ${venv.reason}`);

type ShardRow = {
  task_id: string;
  session_id: string;
  reward: number | null;
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: number[];
  response_logprobs: number[];
};
type Item = { prompt_token_ids: number[]; generation_token_ids: number[]; generation_log_probs: number[] };

let dir: string;
let serve: PolarServe;
let agent: ChildProcess;
let agentUrl: URL;
let agentLog = "";
let rows: Record<string, unknown>[];

beforeAll(async () => {
  if (!venv.ok) return;
  dir = await mkdtemp(join(tmpdir(), "polar-nemo-gym-"));
  serve = await startPolarServe(join(dir, "serve"));
  const lines = (await readFile(join(ROOT, "examples/tasks.jsonl"), "utf8")).trim().split("\n");
  const [hello, count] = lines.map((l) => JSON.parse(l));
  // What every row's task starts from: the example's harness, evaluator and budget.
  const { agent: agentSpec, evaluator, timeout_seconds } = hello;
  await writeFile(
    join(dir, "template.json"),
    JSON.stringify({ agent: agentSpec, evaluator, timeout_seconds }),
  );
  // Row 0 is a plain NeMo Gym row (the instruction is its input); row 1 names its own task fields.
  rows = [
    { responses_create_params: { input: [{ role: "user", content: hello.instruction }] }, task_id: "hello" },
    {
      responses_create_params: { input: "unused: polar_task.instruction wins" },
      polar_task: { task_id: "count-lines", instruction: count.instruction, builder: count.builder },
    },
  ];
  await writeFile(join(dir, "input.jsonl"), `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
  agent = spawn(
    venv.python,
    [
      "-m",
      "polar_rollouts.nemo_gym",
      ...["--control", serve.url, "--control-token", serve.token],
      ...["--task-template", join(dir, "template.json"), "--run-id", "ngtest", "--port", "0"],
    ],
    { cwd: dir, env: venv.env, stdio: ["ignore", "pipe", "pipe"] },
  );
  agent.stderr?.setEncoding("utf8").on("data", (c: string) => {
    agentLog += c;
  });
  agentUrl = await new Promise<URL>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(
      () => reject(new Error(`the agent did not start:\n${out}\n${agentLog}`)),
      30_000,
    );
    agent.stdout?.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      const m = /agent polar_agent at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]));
      }
    });
    agent.once("exit", (code) => reject(new Error(`the agent exited ${code}:\n${out}\n${agentLog}`)));
  });
}, 120_000);

afterAll(async () => {
  if (agent && agent.exitCode === null) {
    agent.kill("SIGTERM");
    await new Promise((r) => agent.once("exit", r));
  }
  await serve?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(cmd: string, args: string[], cwd: string): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: venv.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    child.stderr?.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    child.on("close", (status) => resolve({ status, out }));
  });
}

async function shardRows(taskId: string): Promise<ShardRow[]> {
  const text = await readFile(join(dir, "serve/store/trajectories", `${taskId}.jsonl`), "utf8");
  return text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

describe.skipIf(!venv.ok)("NeMo Gym's rollout collection against Polar", () => {
  it("gets one session per row, with the shard's reward and tokens per model call", async () => {
    const out = join(dir, "out");
    // nemo-gym 0.4.0 writes its materialized inputs before making the output directory.
    await mkdir(out, { recursive: true });
    const res = await run(
      venv.bin("ng_collect_rollouts"),
      [
        "+agent_name=polar_agent",
        `+input_jsonl_fpath=${join(dir, "input.jsonl")}`,
        `+output_jsonl_fpath=${join(out, "rollouts.jsonl")}`,
        `+head_server={host:${agentUrl.hostname},port:${agentUrl.port}}`,
        "+num_repeats=2",
        "+num_samples_in_parallel=2",
      ],
      dir,
    );
    expect(res.status, `${res.out}\n${agentLog}\n${serve.output()}`).toBe(0);
    const rollouts = (await readFile(join(out, "rollouts.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rollouts).toHaveLength(4);
    // Lines come in completion order; (task index, rollout index) names each row.
    const keys = rollouts.map((r) => `${r._ng_task_index}/${r._ng_rollout_index}`).sort();
    expect(keys).toEqual(["0/0", "0/1", "1/0", "1/1"]);
    const taskIds = rollouts.map((r) => r.polar.task_id).sort();
    expect(taskIds).toEqual(["ngtest.count-lines.0", "ngtest.count-lines.1", "ngtest.t0.0", "ngtest.t0.1"]);

    for (const r of rollouts) {
      const [row, ...more] = await shardRows(r.polar.task_id);
      expect(more).toHaveLength(0);
      expect(r.polar.session_id).toBe(row.session_id);
      expect(r.reward).toBe(row.reward);
      expect(r.reward).toBe(1);
      expect(r._ng_failure_class).toBeUndefined();
      // The row's own keys travel through, as NeMo Gym's agents echo them.
      if (r._ng_task_index === 0) expect(r.task_id).toBe("hello");
      const items: Item[] = r.response.output;
      // Each item's prompt + generation is a prefix of the trace; its generation sits exactly on
      // sampled tokens, and the items together cover every sampled token once, in order.
      const full = [...row.prompt_ids, ...row.response_ids];
      const covered: number[] = [];
      for (const item of items) {
        const start = item.prompt_token_ids.length - row.prompt_ids.length;
        expect(item.prompt_token_ids).toEqual(full.slice(0, item.prompt_token_ids.length));
        expect(item.generation_token_ids).toEqual(
          row.response_ids.slice(start, start + item.generation_token_ids.length),
        );
        expect(item.generation_log_probs).toEqual(
          row.response_logprobs
            .slice(start, start + item.generation_token_ids.length)
            .map((x) => expect.closeTo(x, 5)),
        );
        covered.push(...item.generation_token_ids.map((_, i) => start + i));
      }
      const sampled = row.loss_mask.flatMap((m, i) => (m === 1 ? [i] : []));
      expect(covered).toEqual(sampled);
      expect(items.length).toBeGreaterThanOrEqual(2);
      expect(r.response.output.at(-1).content[0].text).not.toBe("");
    }
    // The mini-agent's calls: hello-file makes three, count-lines (with a think step) four.
    const calls = Object.fromEntries(rollouts.map((r) => [r.polar.task_id, r.response.output.length]));
    expect(calls["ngtest.t0.0"]).toBe(3);

    // NeMo Gym's own model of a /run answer accepts every line, with the token fields kept.
    const check = await run(
      venv.python,
      [
        "-c",
        [
          "import json, sys",
          "from nemo_gym.base_resources_server import BaseVerifyResponse",
          "for line in open(sys.argv[1]):",
          "    v = BaseVerifyResponse.model_validate(json.loads(line))",
          "    assert all(len(o.generation_token_ids) > 0 for o in v.response.output), type(v.response.output[0])",
          "print('validated')",
        ].join("\n"),
        join(out, "rollouts.jsonl"),
      ],
      dir,
    );
    expect(check.out).toContain("validated");
    const metrics = JSON.parse(await readFile(join(out, "rollouts_aggregate_metrics.json"), "utf8"));
    expect(metrics[0].agent_metrics["mean/reward"]).toBe(1);
  }, 300_000);

  it("a re-sent /run waits for the same session instead of starting another", async () => {
    const row = { ...rows[0], _ng_task_index: 0, _ng_rollout_index: 0 };
    const res = await fetch(new URL("/run", agentUrl), { method: "POST", body: JSON.stringify(row) });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.polar.session_id).toBe("ngtest.t0.0-0");
    expect((await shardRows("ngtest.t0.0")).map((r) => r.session_id)).toEqual(["ngtest.t0.0-0"]);
  });

  it("a row the control API refuses is a 400 naming the field", async () => {
    const row = {
      ...rows[1],
      polar_task: { task_id: "bad", agent: { harness: "no-such" } },
      _ng_task_index: 9,
    };
    const res = await fetch(new URL("/run", agentUrl), { method: "POST", body: JSON.stringify(row) });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/harness/);
  });
});

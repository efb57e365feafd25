import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ecosystemVenv, ROOT } from "../support/ecosystem-venv.ts";
import { type PolarServe, startPolarServe } from "../support/polar-serve.ts";

/**
 * NeMo Gym's own rollout collection (`ng_collect_rollouts`, nemo-gym 0.4.0) pointed at Polar's
 * NeMo Gym agent server (`python -m polar_rollouts.nemo_gym`), which runs the repeats of each row
 * as the sessions of one Polar task of `polar serve` (dry-run policy, the shell harness with
 * examples/agents/mini-agent.mjs). The rows that come back must carry the shard's reward and its
 * tokens, call by call, pass NeMo Gym's own `BaseVerifyResponse` model, and share their group.
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
type Agent = { child: ChildProcess; url: URL; log: () => string };

const AGENT_TOKEN = "ng-agent-token-for-the-test";
// Two alternatives (docs/dry-run-policy.md): sample 0 writes hi, sample 1 writes bye. The template's
// judge passes only hi, so one Polar task of 2 samples scores [1, 0]; two 1-sample tasks, [1, 1].
const TWO_WAYS =
  "Create hello.txt containing hi.\n\n```polar-script\nshell: echo hi > hello.txt\nsay: Done.\n---\nshell: echo bye > hello.txt\nsay: Done.\n```\n";

let dir: string;
let serve: PolarServe;
let agent: Agent;
let rows: Record<string, unknown>[];

async function startAgent(name: string, controlToken: string, extra: string[] = []): Promise<Agent> {
  const child = spawn(
    venv.python,
    [
      ...["-m", "polar_rollouts.nemo_gym", "--control", serve.url, "--name", name],
      ...["--task-template", join(dir, "template.json"), "--run-id", "ngtest", "--port", "0", ...extra],
    ],
    {
      cwd: dir,
      env: { ...venv.env, POLAR_CONTROL_TOKEN: controlToken, POLAR_NEMO_GYM_TOKEN: AGENT_TOKEN },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let log = "";
  child.stderr?.setEncoding("utf8").on("data", (c: string) => {
    log += c;
  });
  const url = await new Promise<URL>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`the agent did not start:\n${out}\n${log}`)), 30_000);
    child.stdout?.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      const m = new RegExp(`agent ${name} at (http://\\S+)`).exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]));
      }
    });
    child.once("exit", (code) => reject(new Error(`the agent exited ${code}:\n${out}\n${log}`)));
  });
  return { child, url, log: () => log };
}

async function stopAgent(a: Agent | undefined): Promise<void> {
  if (!a || a.child.exitCode !== null) return;
  a.child.kill("SIGTERM");
  await new Promise((r) => a.child.once("exit", r));
}

beforeAll(async () => {
  if (!venv.ok) return;
  dir = await mkdtemp(join(tmpdir(), "polar-nemo-gym-"));
  serve = await startPolarServe(join(dir, "serve"));
  const lines = (await readFile(join(ROOT, "examples/tasks.jsonl"), "utf8")).trim().split("\n");
  const [hello, count] = lines.map((l) => JSON.parse(l));
  // What every row's task starts from: the example's harness and budget, a judge that wants hi.
  const evaluator = { strategy: "test_on_output", config: { command: "grep -qx hi hello.txt" } };
  await writeFile(
    join(dir, "template.json"),
    JSON.stringify({ agent: hello.agent, evaluator, timeout_seconds: hello.timeout_seconds }),
  );
  // Row 0 is a plain NeMo Gym row (the instruction is its input); row 1 names its own task fields
  // (builder only because the operator allows it below).
  rows = [
    { responses_create_params: { input: [{ role: "user", content: TWO_WAYS }] }, task_id: "hello" },
    {
      responses_create_params: { input: "unused: polar_task.instruction wins" },
      polar_task: { task_id: "count-lines", instruction: count.instruction, builder: count.builder },
    },
  ];
  await writeFile(join(dir, "input.jsonl"), `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
  agent = await startAgent("polar_agent", serve.token, [
    ...["--row-fields", "instruction,task_id,agent.sampling,builder"],
  ]);
}, 120_000);

afterAll(async () => {
  await stopAgent(agent);
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

/** ng_collect_rollouts on a rows file against an agent; the head server's host carries the token. */
async function collect(a: Agent, input: string, out: string, token = AGENT_TOKEN, repeats = 2) {
  await mkdir(out, { recursive: true }); // nemo-gym 0.4.0 writes its materialized inputs before making it
  return run(
    venv.bin("ng_collect_rollouts"),
    [
      `+agent_name=${a === agent ? "polar_agent" : "other_agent"}`,
      `+input_jsonl_fpath=${input}`,
      `+output_jsonl_fpath=${join(out, "rollouts.jsonl")}`,
      `+head_server={host:'polar:${token}@${a.url.hostname}',port:${a.url.port}}`,
      `+num_repeats=${repeats}`,
      "+num_samples_in_parallel=4",
    ],
    dir,
  );
}

async function shardRows(taskId: string): Promise<ShardRow[]> {
  const text = await readFile(join(dir, "serve/store/trajectories", `${taskId}.jsonl`), "utf8");
  return text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

function post(a: Agent, path: string, body: unknown, token = AGENT_TOKEN) {
  return fetch(new URL(path, a.url), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe.skipIf(!venv.ok)("NeMo Gym's rollout collection against Polar", () => {
  it("runs the repeats of each row as one Polar task, with the shard's reward and tokens per call", async () => {
    const out = join(dir, "out");
    const res = await collect(agent, join(dir, "input.jsonl"), out);
    expect(res.status, `${res.out}\n${agent.log()}\n${serve.output()}`).toBe(0);
    // The agent token travels in the head server's host: nothing NeMo Gym writes holds it.
    for (const f of await readdir(out))
      expect(await readFile(join(out, f), "utf8")).not.toContain(AGENT_TOKEN);
    const rollouts = (await readFile(join(out, "rollouts.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rollouts).toHaveLength(4);
    // Lines come in completion order; (task index, rollout index) names each row.
    const keys = rollouts.map((r) => `${r._ng_task_index}/${r._ng_rollout_index}`).sort();
    expect(keys).toEqual(["0/0", "0/1", "1/0", "1/1"]);
    // One task per row, its repeats the task's two samples: one group, one group id.
    const groups = new Map<number, { group: string; sample: number; size: number }[]>();
    for (const r of rollouts) {
      expect(r.polar.group_id).toBe(r.polar.task_id);
      const g = groups.get(r._ng_task_index) ?? [];
      g.push({ group: r.polar.group_id, sample: r.polar.sample_index, size: r.polar.group_size });
      groups.set(r._ng_task_index, g);
    }
    expect([...groups.get(0)!].sort((a, b) => a.sample - b.sample)).toEqual([
      { group: "ngtest.t0.g0", sample: 0, size: 2 },
      { group: "ngtest.t0.g0", sample: 1, size: 2 },
    ]);
    expect(new Set(groups.get(1)!.map((g) => g.group))).toEqual(new Set(["ngtest.count-lines.g0"]));
    // The samples differ as a real policy's would: the judge passes sample 0 only.
    const helloRewards = rollouts
      .filter((r) => r._ng_task_index === 0)
      .map((r) => [r.polar.sample_index, r.reward]);
    expect(helloRewards.sort()).toEqual([
      [0, 1],
      [1, 0],
    ]);

    for (const r of rollouts) {
      const shard = await shardRows(r.polar.task_id);
      expect(shard).toHaveLength(2);
      const row = shard.find((s) => s.session_id === r.polar.session_id);
      if (!row) throw new Error(`no shard row for ${r.polar.session_id}`);
      expect(r.reward).toBe(row.reward);
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
    expect(metrics[0].agent_metrics).toMatchObject({ "mean/reward": 0.25, num_failed: 0 });
  }, 300_000);

  it("a re-sent /run waits for the same session; the row sent again later is a new sample", async () => {
    const row = { ...rows[0], _ng_task_index: 7, _ng_rollout_index: 0 };
    const [a, b] = await Promise.all([post(agent, "/run", row), post(agent, "/run", row)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const [first, resent] = [await a.json(), await b.json()];
    expect(resent.polar.session_id).toBe(first.polar.session_id);
    expect(first.polar.group_size).toBe(1);
    expect((await shardRows(first.polar.task_id)).map((r) => r.session_id)).toEqual([first.polar.session_id]);
    // The next step's same row: a new task, never a 409 or the old session.
    const again = await post(agent, "/run", row);
    expect(again.status).toBe(200);
    const next = await again.json();
    expect(next.polar.task_id).not.toBe(first.polar.task_id);
  }, 120_000);

  it("groups TRL's rows, which carry only _rowidx, per prompt (they collided on one task id, 409)", async () => {
    const prompts = ["Say a.\n\n```polar-script\nsay: a\n```\n", "Say b.\n\n```polar-script\nsay: b\n```\n"];
    const trlRows = prompts.flatMap((p, i) =>
      [0, 1].map((g) => ({ responses_create_params: { input: p, temperature: 1 }, _rowidx: 2 * i + g })),
    );
    const answers = await Promise.all(trlRows.map((r) => post(agent, "/run", r)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const docs = await Promise.all(answers.map((a) => a.json()));
    const groups = docs.map((d) => d.polar.group_id);
    expect(groups[0]).toBe(groups[1]);
    expect(groups[2]).toBe(groups[3]);
    expect(groups[0]).not.toBe(groups[2]);
    expect(docs.map((d) => d.polar.sample_index).sort()).toEqual([0, 0, 1, 1]);
  }, 120_000);

  it("refuses the row that replaced the judge's check with `true`, naming the field in NeMo Gym's error", async () => {
    const hostile = {
      ...rows[0],
      polar_task: {
        task_id: "hostile",
        evaluator: { strategy: "test_on_output", config: { command: "true" } },
      },
    };
    await writeFile(join(dir, "hostile.jsonl"), `${JSON.stringify(hostile)}\n`);
    const res = await collect(agent, join(dir, "hostile.jsonl"), join(dir, "out-hostile"), AGENT_TOKEN, 1);
    expect(res.status).not.toBe(0);
    expect(res.out).toContain("polar_task.evaluator: a row may not set this field");
    const submitted = await readdir(join(dir, "serve/store/tasks"));
    expect(submitted.filter((f) => f.includes("hostile"))).toEqual([]);
  }, 120_000);

  it("puts a control-API failure's reason into NeMo Gym's own error output, not a bare 502", async () => {
    const wrong = await startAgent("other_agent", "not-the-control-token");
    try {
      await writeFile(join(dir, "plain.jsonl"), `${JSON.stringify(rows[0])}\n`);
      const res = await collect(wrong, join(dir, "plain.jsonl"), join(dir, "out-wrong"), AGENT_TOKEN, 1);
      expect(res.status).not.toBe(0);
      expect(res.out).toContain("control API 401");
    } finally {
      await stopAgent(wrong);
    }
  }, 120_000);
});

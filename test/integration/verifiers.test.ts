import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ecosystemVenv, ROOT } from "../support/ecosystem-venv.ts";
import { type PolarServe, startPolarServe } from "../support/polar-serve.ts";

/**
 * verifiers' own evaluation entry point (`vf-eval`, verifiers 0.4.0) on the `polar-verifiers`
 * taskset: every rollout is one session of `polar serve` (dry-run policy, the shell harness with
 * examples/agents/mini-agent.mjs). Read back with verifiers' trainer loader (`WireTrace`), each
 * rollout must be one branch whose tokens, sampled mask and logprobs are the shard's, with the
 * shard's reward.
 */
const venv = await ecosystemVenv("verifiers");
if (!venv.ok) console.warn(`skipping the verifiers test: ${venv.reason}`);

type ShardRow = {
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: number[];
  response_logprobs: number[];
  reward: number;
};
type Checked = {
  task: string;
  ok: boolean;
  reward: number;
  polar: { task_id: string; session_id: string; status: string; reward: number; calls: number };
  calls: number;
  branches: { token_ids: number[]; sampled_mask: boolean[]; logprobs: number[] }[];
  shard: ShardRow[];
};

/** One verifiers trace of one Polar session: ok, the shard's reward, one branch that is the shard's tokens. */
function expectShardTrace(t: Checked): void {
  expect(t.ok).toBe(true);
  expect(t.polar.status).toBe("COMPLETED");
  const [row, ...more] = t.shard;
  expect(more).toHaveLength(0);
  expect(t.reward).toBe(row.reward);
  expect(t.calls).toBe(t.polar.calls);
  expect(t.calls).toBeGreaterThanOrEqual(2);
  // Append-only: the whole session is one training sample, token for token the shard's.
  expect(t.branches).toHaveLength(1);
  const [b] = t.branches;
  expect(b.token_ids).toEqual([...row.prompt_ids, ...row.response_ids]);
  expect(b.sampled_mask).toEqual([...row.prompt_ids.map(() => false), ...row.loss_mask.map((m) => m === 1)]);
  // traces.jsonl rounds logprobs to 4 decimals; 0 where nothing was sampled.
  const expected = [
    ...row.prompt_ids.map(() => 0),
    ...row.response_logprobs.map((x, i) => (row.loss_mask[i] ? x : 0)),
  ];
  expect(b.logprobs.map((x, i) => Math.abs(x - expected[i]) < 1e-3)).not.toContain(false);
}

let dir: string;
let serve: PolarServe;

beforeAll(async () => {
  if (!venv.ok) return;
  dir = await mkdtemp(join(tmpdir(), "polar-verifiers-"));
  serve = await startPolarServe(join(dir, "serve"));
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout?.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    child.stderr?.setEncoding("utf8").on("data", (c: string) => {
      err += c;
    });
    child.on("close", (status) => resolve({ status, out, err }));
  });
}

describe.skipIf(!venv.ok)("verifiers on the polar-verifiers taskset", () => {
  it("runs each rollout as a Polar session and records the shard's tokens and reward", async () => {
    const store = join(dir, "serve/store");
    const env = {
      ...venv.env,
      POLAR_CONTROL_URL: serve.url,
      POLAR_CONTROL_TOKEN: serve.token,
      POLAR_STORE: store,
    };
    // hello-file and count-lines (examples/tasks.jsonl), two rollouts each; nothing runs in
    // verifiers' own runtime, and its model client is never called (Polar samples).
    const res = await run(
      venv.bin("vf-eval"),
      [
        "polar-verifiers",
        ...["--env.taskset.tasks", join(ROOT, "examples/tasks.jsonl")],
        ...["-n", "2", "-r", "2", "--env.agent.runtime.type", "subprocess"],
        ...["--model", "policy", "--client.base-url", "http://127.0.0.1:9/v1"],
        ...["--no-push", "--no-rich", "-o", join(dir, "out"), "--run.name", "polar", "--clean"],
      ],
      env,
    );
    expect(res.status, `${res.err.slice(-4000)}\n${serve.output().slice(-2000)}`).toBe(0);
    const check = await run(
      venv.python,
      [join(ROOT, "test/support/vf-trace-check.py"), "run", join(dir, "out/polar"), store],
      env,
    );
    expect(check.status, check.err).toBe(0);
    const traces: Checked[] = check.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(traces.map((t) => t.task).sort()).toEqual([
      "count-lines",
      "count-lines",
      "hello-file",
      "hello-file",
    ]);
    expect(new Set(traces.map((t) => t.polar.session_id)).size).toBe(4);
    for (const t of traces) expectShardTrace(t);
  }, 300_000);

  it("cancels the Polar session when verifiers' rollout timeout cancels the harness", async () => {
    const store = join(dir, "serve/store");
    const env = {
      ...venv.env,
      POLAR_CONTROL_URL: serve.url,
      POLAR_CONTROL_TOKEN: serve.token,
      POLAR_STORE: store,
    };
    const [hello] = (await readFile(join(ROOT, "examples/tasks.jsonl"), "utf8")).split("\n");
    const slow = {
      ...JSON.parse(hello),
      task_id: "slow",
      instruction: "Wait.\n\n```polar-script\nshell: sleep 30\nsay: Done.\n```\n",
    };
    await writeFile(join(dir, "slow.jsonl"), `${JSON.stringify(slow)}\n`);
    await run(
      venv.bin("vf-eval"),
      [
        "polar-verifiers",
        ...["--env.taskset.tasks", join(dir, "slow.jsonl"), "--env.agent.timeout.rollout", "3"],
        ...["-n", "1", "-r", "1", "--env.agent.runtime.type", "subprocess"],
        ...["--model", "policy", "--client.base-url", "http://127.0.0.1:9/v1"],
        ...["--no-push", "--no-rich", "-o", join(dir, "out"), "--run.name", "slow", "--clean"],
      ],
      env,
    );
    const [task] = (await readdir(join(store, "tasks")))
      .filter((f) => f.startsWith("slow."))
      .map((f) => f.slice(0, -5));
    expect(task).toBeDefined();
    const status = await fetch(`${serve.url}/v1/tasks/${task}`, {
      headers: { authorization: `Bearer ${serve.token}` },
    });
    expect((await status.json()).cancelled).toBe(true);
  }, 300_000);

  it("runs a rollout through verifiers' env server, the way prime-rl's orchestrator does", async () => {
    const store = join(dir, "serve/store");
    const env = {
      ...venv.env,
      POLAR_CONTROL_URL: serve.url,
      POLAR_CONTROL_TOKEN: serve.token,
      POLAR_STORE: store,
    };
    const check = await run(
      venv.python,
      [join(ROOT, "test/support/vf-trace-check.py"), "serve", join(ROOT, "examples/tasks.jsonl"), store],
      env,
    );
    expect(check.status, check.err.slice(-4000)).toBe(0);
    const traces: Checked[] = check.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(traces.map((t) => t.task)).toEqual(["hello-file"]);
    expectShardTrace(traces[0]);
  }, 300_000);
});

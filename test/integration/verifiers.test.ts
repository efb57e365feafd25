import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ecosystemVenv, ROOT } from "../support/ecosystem-venv.ts";
import { type PolarServe, startPolarServe } from "../support/polar-serve.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

/**
 * verifiers' own evaluation entry point (`vf-eval`, verifiers 0.4.0) and env server (the path
 * prime-rl's orchestrator takes) on the `polar-verifiers` taskset: the rollouts of one example are
 * the sessions of one Polar task of `polar serve` (dry-run policy behind a relay that records what
 * the engine receives; the shell harness with examples/agents/mini-agent.mjs). Read back with
 * verifiers' trainer loader (`WireTrace`), each rollout must be one branch whose tokens, sampled
 * mask and logprobs are its session's shard row, with the shard's reward; no trace, output or
 * wire message may hold the control token.
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
  errors?: string[];
  polar: {
    task_id: string;
    group_id: string;
    session_id: string;
    sample_index: number;
    group_size: number;
    status: string;
    reward: number;
    calls: number;
  };
  calls: number;
  branches: { token_ids: number[]; sampled_mask: boolean[]; logprobs: number[] }[];
  shard: ShardRow[];
  wire_has_token: boolean;
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

/** An engine in front of the dry-run policy that keeps every chat completion body it receives. */
type Relay = { url: string; bodies: Record<string, unknown>[]; server: Server };
async function startRelay(policy: PolicyServer): Promise<Relay> {
  const bodies: Record<string, unknown>[] = [];
  const target = new URL(policy.url);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.url?.endsWith("/chat/completions")) bodies.push(JSON.parse(body.toString("utf8")));
      const out = request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on("error", () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, server };
}

let dir: string;
let serve: PolarServe;
let policy: PolicyServer;
let relay: Relay;
let other: Relay;
let env: NodeJS.ProcessEnv;
let store: string;

beforeAll(async () => {
  if (!venv.ok) return;
  dir = await mkdtemp(join(tmpdir(), "polar-verifiers-"));
  policy = await startPolicy();
  relay = await startRelay(policy);
  other = await startRelay(policy);
  serve = await startPolarServe(join(dir, "serve"), ["--upstream", relay.url]);
  store = join(dir, "serve/store");
  env = { ...venv.env, POLAR_CONTROL_URL: serve.url, POLAR_CONTROL_TOKEN: serve.token, POLAR_STORE: store };
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  for (const r of [relay, other]) if (r) await new Promise((done) => r.server.close(done));
  await policy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(
  cmd: string,
  args: string[],
  withEnv: NodeJS.ProcessEnv,
): Promise<{ status: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: dir, env: withEnv, stdio: ["ignore", "pipe", "pipe"] });
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

const vfEval = (args: string[], withEnv = env) =>
  run(
    venv.bin("vf-eval"),
    [
      "polar-verifiers",
      ...args,
      ...["--env.agent.runtime.type", "subprocess"],
      ...["--model", "policy", "--client.base-url", "http://127.0.0.1:9/v1"],
      ...["--no-push", "--no-rich", "-o", join(dir, "out")],
    ],
    withEnv,
  );

async function checked(mode: string, source: string, withEnv = env): Promise<Checked[]> {
  const check = await run(
    venv.python,
    [join(ROOT, "test/support/vf-trace-check.py"), mode, source, store],
    withEnv,
  );
  expect(check.status, check.err.slice(-4000)).toBe(0);
  return check.out
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe.skipIf(!venv.ok)("verifiers on the polar-verifiers taskset", () => {
  it("runs the rollouts of each example as one Polar task and records the shard's tokens and reward", async () => {
    // hello-file and count-lines (examples/tasks.jsonl), two rollouts each; nothing runs in
    // verifiers' own runtime, and its model client is never called (Polar samples). The harness
    // flags of docs/trainers.md, which verifiers takes once the harness id is named.
    const res = await vfEval([
      ...["--env.taskset.tasks", join(ROOT, "examples/tasks.jsonl"), "-n", "2", "-r", "2"],
      ...["--env.agent.harness.id", "polar-verifiers", "--env.agent.harness.timeout", "240"],
      ...["--run.name", "polar", "--clean"],
    ]);
    expect(res.status, `${res.err.slice(-4000)}\n${serve.output().slice(-2000)}`).toBe(0);
    // Issue 41 item 14: the control token was in every trace's agent.config.harness and on stdout.
    expect(res.out + res.err).not.toContain(serve.token);
    for (const f of await filesUnder(join(dir, "out/polar")))
      expect(await readFile(f, "utf8")).not.toContain(serve.token);
    const traces = await checked("run", join(dir, "out/polar"));
    expect(traces.map((t) => t.task).sort()).toEqual([
      "count-lines",
      "count-lines",
      "hello-file",
      "hello-file",
    ]);
    expect(new Set(traces.map((t) => t.polar.session_id)).size).toBe(4);
    // One group per example: both rollouts are samples 0 and 1 of one task.
    for (const name of ["hello-file", "count-lines"]) {
      const mine = traces.filter((t) => t.task === name);
      expect(new Set(mine.map((t) => t.polar.group_id)).size).toBe(1);
      expect(mine.map((t) => [t.polar.sample_index, t.polar.group_size]).sort()).toEqual([
        [0, 2],
        [1, 2],
      ]);
    }
    for (const t of traces) expectShardTrace(t);
  }, 300_000);

  it("stops vf-eval with the reason when the control token is wrong, before any rollout", async () => {
    const res = await vfEval(
      [
        "--env.taskset.tasks",
        join(ROOT, "examples/tasks.jsonl"),
        "-n",
        "1",
        "-r",
        "1",
        "--run.name",
        "wrong",
        "--clean",
      ],
      { ...env, POLAR_CONTROL_TOKEN: "not-the-token" },
    );
    expect(res.status).not.toBe(0);
    expect(res.out + res.err).toContain("refused the harness: control API 401");
  }, 120_000);

  it("cancels the Polar session when verifiers' rollout timeout cancels the harness", async () => {
    const [hello] = (await readFile(join(ROOT, "examples/tasks.jsonl"), "utf8")).split("\n");
    const slow = {
      ...JSON.parse(hello),
      task_id: "slow",
      instruction: "Wait.\n\n```polar-script\nshell: sleep 30\nsay: Done.\n```\n",
    };
    await writeFile(join(dir, "slow.jsonl"), `${JSON.stringify(slow)}\n`);
    await vfEval([
      ...["--env.taskset.tasks", join(dir, "slow.jsonl"), "--env.agent.timeout.rollout", "3"],
      ...["-n", "1", "-r", "1", "--run.name", "slow", "--clean"],
    ]);
    const [task] = (await readdir(join(store, "tasks")))
      .filter((f) => f.includes(".slow."))
      .map((f) => f.slice(0, -5));
    expect(task).toBeDefined();
    const status = await fetch(`${serve.url}/v1/tasks/${task}`, {
      headers: { authorization: `Bearer ${serve.token}` },
    });
    expect((await status.json()).cancelled).toBe(true);
  }, 300_000);

  it("prime-rl's path: the engine receives the orchestrator's model name and cache_salt, on every call", async () => {
    relay.bodies.length = 0;
    const traces = await checked("serve", join(ROOT, "examples/tasks.jsonl"), {
      ...env,
      VF_MODEL: "lora-step-3",
      VF_CACHE_SALT: "salt-step-3",
      VF_BASE_URL: `${other.url}/v1`,
      VF_REGISTER: "1",
      VF_REGISTER_ALLOW: other.url,
    });
    expect(traces.map((t) => t.task)).toEqual(["hello-file"]);
    expectShardTrace(traces[0]);
    // Nothing the env server sends its client holds the control token.
    expect(traces[0].wire_has_token).toBe(false);
    const calls = [...relay.bodies, ...other.bodies];
    expect(calls.length).toBe(traces[0].calls);
    for (const body of calls) expect([body.model, body.cache_salt]).toEqual(["lora-step-3", "salt-step-3"]);
    // The client's base URL reached Polar: its engine is now one of the proxy's replicas.
    const replicas = await fetch(`${serve.url}/v1/replicas`, {
      headers: { authorization: `Bearer ${serve.token}` },
    });
    expect(JSON.stringify(await replicas.json())).toContain(other.url);
  }, 300_000);

  it("never registers an engine address a client chose with the operator's token (register_client)", async () => {
    // Issue 48 item 10, the red team's attack: any client of the env server sent its own base_url,
    // the harness registered it through /v1/replicas with the control token, and a later task's
    // session prompts went there. The operator's register_allow lists only `other`.
    const attacker = await startRelay(policy);
    try {
      const [t] = await checked("serve", join(ROOT, "examples/tasks.jsonl"), {
        ...env,
        VF_BASE_URL: `${attacker.url}/v1`,
        VF_REGISTER: "1",
        VF_REGISTER_ALLOW: other.url,
      });
      expect(t.ok).toBe(false);
      expect(JSON.stringify(t.errors)).toContain("which register_allow does not list");
      const replicas = await fetch(`${serve.url}/v1/replicas`, {
        headers: { authorization: `Bearer ${serve.token}` },
      });
      expect(JSON.stringify(await replicas.json())).not.toContain(attacker.url);
      expect(attacker.bodies).toEqual([]);
    } finally {
      await new Promise((done) => attacker.server.close(done));
    }
  }, 300_000);

  it("refuses a sampling field Polar cannot apply to the session's calls, naming it", async () => {
    const [t] = await checked("serve", join(ROOT, "examples/tasks.jsonl"), {
      ...env,
      VF_SAMPLING: JSON.stringify({ presence_penalty: 1.5 }),
    });
    expect(t.ok).toBe(false);
    expect(JSON.stringify(t.errors)).toContain("sampling presence_penalty: Polar cannot apply it");
  }, 300_000);

  it("runs a task only as the environment's own file has it, never as an env-server client sends it", async () => {
    const before = await readdir(join(store, "tasks"));
    const [t] = await checked("hostile", join(ROOT, "examples/tasks.jsonl"));
    expect(t.ok).toBe(false);
    expect(JSON.stringify(t.errors)).toContain("differs from the task file in evaluator");
    expect(await readdir(join(store, "tasks"))).toEqual(before);
  }, 300_000);
});

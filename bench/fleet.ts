// Issue 51, item 5: what a trainer's step costs on the fleet path against `polar serve`, side by side
// in one run on the same dry-run policy and the same task, and what version lag a trainer sees
// across proxies on one store.
//
// Fleet: s3rver (its own process), local-aws-sqs (in this process), `polar proxy --jobs-queue` on
// the S3 store and two `polar runner` processes consuming the queue (as docs/control-api.md deploys
// it). Baseline: `polar serve` (proxy, in-memory queue, runner and directory store in one process).
// A step is what a trainer's rollout does: POST a group of N sessions, poll GET /v1/tasks/{id}
// until `completed` (every session's result and the group shard written), then download the shard
// through the URL the trajectories call hands out.
//
// Lag: a second `polar proxy` and the Worker (workerd) on the same store. The trainer sets a version
// through proxy A; the next model call through B (or the Worker) must be stamped with it. The design
// reads the store on every call, so the lag should be none; its per-call price is the
// `shared-state` bench's, not measured again here.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { openStore } from "../shared/node/open-store.ts";
import { mintSessionToken } from "../shared/session-token.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { startPolarServe } from "../test/support/polar-serve.ts";
import { readCaptures } from "../test/support/proxy.ts";
import { scriptedTask } from "../test/support/runner-stack.ts";
import { startSqs } from "../test/support/sqs.ts";
import { startWorkers, type WorkerHost } from "../test/worker/worker-host.ts";
import type { Benchmark } from "./benchmark.ts";
import { type Child, startChild } from "./support/children.ts";
import { startPolicyProcess } from "./support/policy-process.ts";
import { startS3 } from "./support/start-s3.ts";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
/** Measured steps per path (after one unmeasured step each). */
const STEPS = env("BENCH_FLEET_STEPS", 10);
/** Sessions per step (the group's num_samples). */
const SESSIONS = env("BENCH_FLEET_SESSIONS", 8);
/** Version changes in the lag measurement, half read back through proxy B, half through the Worker. */
const TRIALS = env("BENCH_FLEET_TRIALS", 20);
/** Run slots: `polar serve --run 4` against two runners with `--run 2` each. */
const RUN_SLOTS = 4;
const POLL_MS = 100;
const STEP_TIMEOUT_MS = 180_000;
const KEY = "bench-fleet-signing-key-0123456789";
const CONTROL = "bench-fleet-control";
const BUCKET = "polar-bench"; // bench/support/s3rver-process.ts
const PREFIX = "fleet";
const POLAR = new URL("../bin/polar.js", import.meta.url).pathname;

/** The same small task for both paths: the mini agent follows 3 script steps, one model call each. */
const task = (taskId: string) => ({
  ...scriptedTask(taskId, ["shell: echo one > a.txt", "shell: cat a.txt", "say: done"]),
  num_samples: SESSIONS,
});

interface Step {
  path: string;
  /** Submit to shard downloaded, s. */
  total: number;
  submitMs: number;
  /** Submit answered to the first session seen started (`counts.started`): queue pickup and session set-up. */
  startS: number;
  /** Submit answered to `completed` seen. */
  runS: number;
  shardMs: number;
  completed: number;
}

interface Target {
  name: string;
  url: string;
  token: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function oneStep(t: Target, taskId: string): Promise<Step> {
  const headers = { authorization: `Bearer ${t.token}`, "content-type": "application/json" };
  const t0 = performance.now();
  const sub = await fetch(`${t.url}/v1/tasks`, {
    method: "POST",
    headers,
    body: JSON.stringify(task(taskId)),
  });
  const subText = await sub.text();
  if (sub.status !== 201)
    throw new Error(`${t.name}: submit of ${taskId} answered ${sub.status}: ${subText}`);
  const t1 = performance.now();
  let status: { state: string; counts: Record<string, number> };
  let started: number | null = null;
  for (;;) {
    const res = await fetch(`${t.url}/v1/tasks/${taskId}`, { headers });
    status = (await res.json()) as typeof status;
    if (started === null && ((status.counts.started ?? 0) > 0 || (status.counts.finished ?? 0) > 0))
      started = performance.now();
    if (status.state === "completed") break;
    if (status.state === "cancelled") throw new Error(`${t.name}: ${taskId} was cancelled`);
    if (performance.now() - t0 > STEP_TIMEOUT_MS)
      throw new Error(
        `${t.name}: ${taskId} not completed after ${STEP_TIMEOUT_MS} ms: ${JSON.stringify(status)}`,
      );
    await sleep(POLL_MS);
  }
  const t2 = performance.now();
  const listed = (await (await fetch(`${t.url}/v1/tasks/${taskId}/trajectories`, { headers })).json()) as {
    complete: boolean;
    shard: { key: string; url: string | null } | null;
  };
  if (!listed.complete || !listed.shard?.url)
    throw new Error(`${t.name}: ${taskId} has no shard URL: ${JSON.stringify(listed)}`);
  const shard = await fetch(new URL(listed.shard.url, t.url));
  const bytes = (await shard.arrayBuffer()).byteLength;
  if (!shard.ok || bytes === 0) throw new Error(`${t.name}: shard of ${taskId} answered ${shard.status}`);
  const t3 = performance.now();
  return {
    path: t.name,
    total: (t3 - t0) / 1000,
    submitMs: t1 - t0,
    startS: ((started ?? t2) - t1) / 1000,
    runS: (t2 - t1) / 1000,
    shardMs: t3 - t2,
    completed: status.counts.COMPLETED ?? 0,
  };
}

async function startProxyProcess(childEnv: NodeJS.ProcessEnv, args: string[], cwd: string) {
  let url = "";
  const child = await startChild(process.execPath, [POLAR, "proxy", ...args], {
    env: childEnv,
    cwd,
    ready: (line) => {
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m) url = m[1] as string;
      return m !== null;
    },
  });
  return { child, url };
}

interface LagRow {
  via: string;
  trials: number;
  stampedNew: number;
  putP50: number;
  callP50: number;
  callP95: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Version k through proxy A, then at once one model call through `via`: is it stamped k? */
async function measureLag(
  a: string,
  vias: { name: string; fetch: (path: string, init: RequestInit) => Promise<Response> }[],
  captures: ObjectStore,
): Promise<LagRow[]> {
  const control = { authorization: `Bearer ${CONTROL}`, "content-type": "application/json" };
  const rows = vias.map((v) => ({ via: v.name, put: [] as number[], call: [] as number[], stampedNew: 0 }));
  const call = async (via: (typeof vias)[number], taskId: string, sessionId: string) => {
    const token = await mintSessionToken({ sessionId, taskId, ttlSeconds: 600 }, KEY);
    const res = await via.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: sessionId }] }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${via.name}: model call answered ${res.status}: ${text}`);
  };
  // Unmeasured: a proxy's first calls fetch the model's context length and warm its pools.
  for (const via of vias)
    for (let w = 0; w < 3; w++) await call(via, "lag-warmup", `${via.name}-${w}`.replace(/\W/g, "-"));
  for (let i = 0; i < TRIALS; i++) {
    const version = 100 + i;
    const row = rows[i % rows.length] as (typeof rows)[number];
    const via = vias[i % vias.length] as (typeof vias)[number];
    const t0 = performance.now();
    const put = await fetch(`${a}/v1/policy-version`, {
      method: "PUT",
      headers: control,
      body: JSON.stringify({ version }),
    });
    if (put.status !== 200)
      throw new Error(`PUT /v1/policy-version answered ${put.status}: ${await put.text()}`);
    await put.arrayBuffer();
    const t1 = performance.now();
    const taskId = `lag-task-${i}`;
    const sessionId = `lag-session-${i}`;
    await call(via, taskId, sessionId);
    const t2 = performance.now();
    row.put.push(t1 - t0);
    row.call.push(t2 - t1);
    // The capture is written by the proxy that served the call; the Worker may finish it after answering.
    let stamped: string | null | undefined;
    for (let tries = 0; tries < 100 && stamped === undefined; tries++) {
      const [capture] = await readCaptures(captures, taskId, sessionId);
      if (capture) stamped = capture.policy_version;
      else await sleep(50);
    }
    if (stamped === String(version)) row.stampedNew++;
  }
  return rows.map((r) => ({
    via: r.via,
    trials: r.call.length,
    stampedNew: r.stampedNew,
    putP50: quantile(r.put, 0.5),
    callP50: quantile(r.call, 0.5),
    callP95: quantile(r.call, 0.95),
  }));
}

const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);

const benchmark: Benchmark = {
  name: "fleet",
  title:
    "A trainer's step on the fleet (S3 + SQS + polar proxy + runners) against polar serve, and version lag across proxies",
  async run() {
    const load0 = os.loadavg();
    const dir = mkdtempSync(join(os.tmpdir(), "polar-bench-fleet-"));
    const [policy, s3, sqs] = await Promise.all([startPolicyProcess(), startS3(), startSqs()]);
    const children: Child[] = [];
    let serveStop: (() => Promise<void>) | null = null;
    let worker: WorkerHost | null = null;
    const steps: Step[] = [];
    let lag: LagRow[] = [];
    try {
      const queueUrl = await sqs.createQueue("bench-fleet-jobs");
      const store = `s3://${BUCKET}/${PREFIX}`;
      const childEnv = {
        ...process.env,
        ...sqs.env,
        // s3rver's credentials win; local-aws-sqs takes any.
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_S3_FORCE_PATH_STYLE: "1",
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
        AWS_REGION: "us-east-1",
        POLAR_SIGNING_KEY: KEY,
        POLAR_CONTROL_TOKEN: "",
        POLAR_ADMIN_TOKEN: "",
      };
      const proxyArgs = [
        ...["--upstream", policy.url, "--port", "0", "--store", store],
        ...["--jobs-queue", queueUrl, "--control-token", CONTROL],
      ];
      console.error("bench: fleet: starting the fleet (proxy, 2 runners) and polar serve...");
      const a = await startProxyProcess(childEnv, proxyArgs, dir);
      children.push(a.child);
      for (const n of [0, 1]) {
        const runner = await startChild(
          process.execPath,
          [
            POLAR,
            "runner",
            ...["--queue", queueUrl, "--store", store, "--proxy-url", a.url],
            ...["--run", String(RUN_SLOTS / 2), "--wait-seconds", "1", "--grace-seconds", "2"],
            ...["--sessions-dir", join(dir, `sessions-${n}`)],
          ],
          { env: childEnv, cwd: dir, ready: (line) => line.includes("run slots") },
        );
        children.push(runner);
      }
      const serve = await startPolarServe(join(dir, "serve"), [
        ...["--upstream", policy.url, "--run", String(RUN_SLOTS)],
      ]);
      serveStop = serve.stop;
      const fleet: Target = { name: "fleet", url: a.url, token: CONTROL };
      const local: Target = { name: "polar serve", url: serve.url, token: serve.token };

      // One unmeasured step each (first harness start, JIT, pools), then ABBA so drift hits both alike.
      let id = 0;
      for (const t of [fleet, local]) {
        console.error(`bench: fleet: warm-up step on ${t.name}...`);
        await oneStep(t, `fleet-warmup-${id++}`);
      }
      for (let i = 0; i < STEPS; i++) {
        const order = i % 2 === 0 ? [fleet, local] : [local, fleet];
        for (const t of order) {
          const s = await oneStep(t, `fleet-step-${id++}`);
          console.error(`bench: fleet: ${t.name} step ${i}: ${f2(s.total)} s`);
          steps.push(s);
        }
      }
      await serve.stop();
      serveStop = null;

      console.error("bench: fleet: version lag (a second polar proxy and the Worker on the same store)...");
      const b = await startProxyProcess(childEnv, proxyArgs, dir);
      children.push(b.child);
      worker = await startWorkers([
        {
          name: "edge",
          vars: {
            UPSTREAM_URL: policy.url,
            POLAR_SIGNING_KEY: KEY,
            POLAR_CONTROL_TOKEN: CONTROL,
            JOBS_QUEUE_URL: queueUrl,
            STORE: "s3",
            S3_BUCKET: BUCKET,
            S3_PREFIX: PREFIX,
            S3_ENDPOINT: s3.endpoint,
            AWS_ACCESS_KEY_ID: "S3RVER",
            AWS_SECRET_ACCESS_KEY: "S3RVER",
          },
        },
      ]);
      const host = worker;
      const captures = openStore(store, childEnv);
      lag = await measureLag(
        a.url,
        [
          { name: "second polar proxy", fetch: (p, init) => fetch(`${b.url}${p}`, init) },
          { name: "Worker (workerd)", fetch: (p, init) => host.fetch("edge", p, init) },
        ],
        captures,
      );
    } finally {
      await serveStop?.();
      await worker?.dispose();
      await Promise.all(children.map((c) => c.stop()));
      await Promise.all([policy.child.stop(), s3.child.stop(), sqs.stop()]);
      rmSync(dir, { recursive: true, force: true });
    }
    const load1 = os.loadavg();

    const summary = ["fleet", "polar serve"].map((path) => {
      const mine = steps.filter((s) => s.path === path);
      const median = (of: (s: (typeof mine)[number]) => number) => quantile(mine.map(of), 0.5);
      const totals = mine.map((s) => s.total);
      return {
        path,
        n: mine.length,
        p50: median((s) => s.total),
        mean: mean(totals),
        min: Math.min(...totals),
        max: Math.max(...totals),
        submit: median((s) => s.submitMs),
        run: median((s) => s.runS),
        start: median((s) => s.startS),
        shard: median((s) => s.shardMs),
        sessions: mine.reduce((acc, s) => acc + s.completed, 0),
      };
    });
    const [fl, sv] = summary as [(typeof summary)[number], (typeof summary)[number]];
    const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(", ");
    const markdown = [
      `Load average (1, 5, 15 min) at the start: ${load(load0)}; at the end: ${load(load1)} (2 cores, shared with other work).`,
      "",
      `A step: POST a group of ${SESSIONS} sessions of one task (the shell harness's mini agent following a 3-step`,
      "script, one model call a step, against the dry-run policy `polar policy` in its own process), poll",
      `\`GET /v1/tasks/{id}\` every ${POLL_MS} ms until \`completed\` (every result and the group shard written), then download`,
      "the shard through the URL `GET /v1/tasks/{id}/trajectories` hands out. Same policy, same task, the same",
      `${RUN_SLOTS} run slots on each path, one unmeasured step each, then ${STEPS} each in ABBA order.`,
      "",
      "- **fleet**: s3rver (own process) and local-aws-sqs (in the bench process); `polar proxy --jobs-queue` on",
      `  the S3 store; two \`polar runner\` processes (\`--run ${RUN_SLOTS / 2}\`, \`--wait-seconds 1\`) consuming the queue.`,
      `- **polar serve**: \`polar serve --upstream <policy> --run ${RUN_SLOTS}\`: proxy, in-memory queue, runner and`,
      "  directory store in one process.",
      "",
      "| path | steps | sessions COMPLETED | step p50 (s) | mean (s) | min (s) | max (s) | submit p50 (ms) | submit to first started p50 (s) | submit to completed p50 (s) | shard download p50 (ms) |",
      "|---|---|---|---|---|---|---|---|---|---|---|",
      ...summary.map(
        (r) =>
          `| ${r.path} | ${r.n} | ${r.sessions}/${r.n * SESSIONS} | ${f2(r.p50)} | ${f2(r.mean)} | ${f2(r.min)} | ${f2(r.max)} | ${f1(r.submit)} | ${f2(r.start)} | ${f2(r.run)} | ${f1(r.shard)} |`,
      ),
      "",
      `**Fleet / serve: ${f2(fl.p50 / sv.p50)}x at the median step, ${f2(fl.mean / sv.mean)}x on the mean** (${f2(fl.p50 - sv.p50)} s more`,
      `per median step of ${SESSIONS} sessions). A ratio from one run on a shared machine, not a timed target.`,
      `Of that difference, at the medians: the submit (the task and ${SESSIONS} SQS messages against a directory write and an`,
      `in-memory queue) ${f1(fl.submit - sv.submit)} ms, the first session's pickup (SQS receive, then set-up) ${f2(fl.start - sv.start)} s,`,
      `the shard download (presigned S3 GET against a local signed URL) ${f1(fl.shard - sv.shard)} ms; the rest is the sessions'`,
      "own path (captures, results and the shard written to S3, the runners and s3rver as processes of their own on the",
      "same cores). Other work on the machine weighs more on the fleet, which runs more processes: read the ratio",
      "with the load average above.",
      "",
      "Version lag across proxies: a second `polar proxy` process and the Worker (workerd, Miniflare) on the same",
      `S3 store. ${TRIALS} times: \`PUT /v1/policy-version\` (the next version) through the first proxy, then at once one`,
      "model call through the other, alternating (after 3 unmeasured calls through each); the call's capture is read",
      "back from the store.",
      "",
      "| read back through | trials | next call stamped with the new version | PUT p50 (ms) | next call p50 (ms) | next call p95 (ms) |",
      "|---|---|---|---|---|---|",
      ...lag.map(
        (r) =>
          `| ${r.via} | ${r.trials} | ${r.stampedNew}/${r.trials} | ${f1(r.putP50)} | ${f1(r.callP50)} | ${f1(r.callP95)} |`,
      ),
      "",
      "No lag by design: every model call reads the stored version after it arrived, so the first call after the",
      "PUT returned is stamped with it. What that read costs per call is measured by `npm run bench -- shared-state`",
      '("Shared trainer state" above), not repeated here.',
    ].join("\n");
    return { markdown };
  },
};

export default benchmark;

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
import { type Runner, startRunner } from "../../batch-runner/runner.ts";
import { readShardParquet } from "../../batch-runner/shards/read-shard.ts";
import { keys } from "../../shared/keys.ts";
import { S3Store } from "../../shared/store/s3-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { type StartedSqs, startSqs } from "../support/sqs.ts";

// The trainer's path end to end: `polar proxy --jobs-queue` (the CLI, as deployed) with its store on
// s3rver and jobs on local-aws-sqs; a runner consuming that queue; examples/trainer-submit.ts
// submitting through POST /v1/tasks, polling GET until complete and downloading the shard.
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ADMIN = "e2e-admin-token";
const SIGNING_KEY = "e2e-signing-key-0123456789";

let policy: PolicyServer;
let s3: RunningS3rver;
let sqs: StartedSqs;
let proxy: ChildProcess;
let proxyUrl: string;
let runner: Runner;
let root: string;
let store: S3Store;
let childEnv: Record<string, string>;

beforeAll(async () => {
  [policy, s3, sqs, root] = await Promise.all([
    startPolicy(),
    startS3rver({ bucket: "e2e-store" }),
    startSqs(),
    mkdtemp(join(tmpdir(), "polar-control-e2e-")),
  ]);
  const queueUrl = await sqs.createQueue("e2e-jobs");
  childEnv = {
    ...(process.env as Record<string, string>),
    ...s3.env,
    AWS_ENDPOINT_URL_SQS: sqs.endpoint,
    POLAR_SIGNING_KEY: SIGNING_KEY,
  };
  proxy = spawn(
    process.execPath,
    [
      join(ROOT, "bin/polar.js"),
      "proxy",
      ...["--upstream", policy.url, "--port", "0", "--store", `s3://${s3.bucket}/polar`],
      ...["--jobs-queue", queueUrl, "--admin-token", ADMIN],
    ],
    { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"] },
  );
  proxyUrl = await new Promise<string>((resolve, reject) => {
    let out = "";
    const onData = (chunk: Buffer) => {
      out += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    };
    proxy.stdout?.on("data", onData);
    proxy.stderr?.on("data", (chunk) => {
      out += chunk;
    });
    proxy.once("exit", (code) => reject(new Error(`polar proxy exited with ${code}: ${out}`)));
  });
  store = new S3Store({ bucket: s3.bucket, prefix: "polar", client: s3.client });
  runner = await startRunner({
    queue: new SqsQueue({ url: queueUrl, client: sqs.client }),
    store,
    proxyUrl,
    signingKey: SIGNING_KEY,
    run: 2,
    waitSeconds: 1,
    visibilityTimeoutSeconds: 60,
    sessionsRoot: join(root, "sessions"),
    log: () => {},
  });
});

afterAll(async () => {
  await runner?.stop(0);
  if (proxy && proxy.exitCode === null) {
    const exited = new Promise((resolve) => proxy.once("exit", resolve));
    proxy.kill("SIGTERM");
    await exited;
  }
  await Promise.all([policy?.close(), s3?.stop(), sqs?.stop()]);
  await rm(root, { recursive: true, force: true });
});

function runExample(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, "examples/trainer-submit.ts"), ...args], {
      cwd: root,
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.stderr.on("data", (c) => {
      out += c;
    });
    child.once("exit", (code) => resolve({ code, out }));
  });
}

describe("trainer submit -> SQS -> runner -> shard on S3", () => {
  it("runs examples/trainer-submit.ts against `polar proxy --jobs-queue` to a downloaded shard", async () => {
    const shardFile = join(root, "shard.parquet");
    const { code, out } = await runExample([
      ...["--proxy", proxyUrl, "--admin-token", ADMIN, "--task-id", "hello-file", "--as", "e2e-hello"],
      ...["--timeout-s", "60", "--out", shardFile],
    ]);
    expect(code, out).toBe(0);
    expect(out).toMatch(/submitted e2e-hello: 2 sessions enqueued/);
    expect(out).toMatch(/completed: 2 COMPLETED, 0 TIMEOUT, 0 ERROR; shard trajectories\/e2e-hello\.parquet/);
    const rowLines = out.split("\n").filter((l) => l.startsWith("row "));
    expect(rowLines.length).toBeGreaterThanOrEqual(2);
    for (const line of rowLines) expect(line).toMatch(/status=COMPLETED .*trainable=[1-9]/);

    // The bytes the trainer downloaded are the shard the runner wrote.
    const stored = await store.get(keys.shard("e2e-hello"));
    expect(stored).not.toBeNull();
    const { readFile } = await import("node:fs/promises");
    expect(new Uint8Array(await readFile(shardFile))).toEqual(stored);
    const rows = await readShardParquet(stored as Uint8Array);
    expect(new Set(rows.map((r) => r.session_id))).toEqual(new Set(["e2e-hello-0", "e2e-hello-1"]));
  });

  it("reports status over HTTP and refuses a wrong admin token", async () => {
    const headers = { authorization: `Bearer ${ADMIN}` };
    const status = await (await fetch(`${proxyUrl}/v1/tasks/e2e-hello`, { headers })).json();
    expect(status).toMatchObject({
      state: "completed",
      counts: { finished: 2, pending: 0, COMPLETED: 2 },
      shard_key: "trajectories/e2e-hello.parquet",
    });
    const denied = await fetch(`${proxyUrl}/v1/tasks/e2e-hello`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(denied.status).toBe(401);
  });
});

describe("polar proxy --jobs-queue flags", () => {
  it("refuses --jobs-queue without an admin token, and a queue that is not a URL", () => {
    const { POLAR_ADMIN_TOKEN: _, ...env } = childEnv;
    const run = (args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, "bin/polar.js"), "proxy", "--upstream", policy.url, ...args], {
        cwd: root,
        env,
        encoding: "utf8",
        timeout: 20_000,
      });
    const noToken = run(["--jobs-queue", "http://127.0.0.1:9/000000000000/q"]);
    expect(noToken.status).toBe(2);
    expect(noToken.stderr).toMatch(/--jobs-queue .*needs --admin-token/);
    const notUrl = run(["--jobs-queue", "jobs", "--admin-token", ADMIN]);
    expect(notUrl.status).toBe(2);
    expect(notUrl.stderr).toMatch(/--jobs-queue must be an SQS queue URL/);
  });
});

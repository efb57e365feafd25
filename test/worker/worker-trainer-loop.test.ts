import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
import { type Runner, startRunner } from "../../batch-runner/runner.ts";
import { keys } from "../../shared/keys.ts";
import { S3Store } from "../../shared/store/s3-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { type StartedSqs, startSqs } from "../support/sqs.ts";
import { startWorkers, type WorkerHost } from "./worker-host.ts";

// The whole loop with the Worker as the only gateway: the trainer script submits to the Worker's
// control API, a runner consumes the jobs and points its harness at the Worker (session tokens
// verified there, captures written by the Worker to s3rver), and the shard comes back through a
// URL the Worker presigned.
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ADMIN = "loop-admin-token";
const SIGNING_KEY = "loop-signing-key-0123456789";

let policy: PolicyServer;
let s3: RunningS3rver;
let sqs: StartedSqs;
let host: WorkerHost;
let runner: Runner;
let root: string;
let store: S3Store;

beforeAll(async () => {
  [policy, s3, sqs, root] = await Promise.all([
    startPolicy(),
    startS3rver({ bucket: "loop-store" }),
    startSqs(),
    mkdtemp(join(tmpdir(), "polar-worker-loop-")),
  ]);
  const queueUrl = await sqs.createQueue("loop-jobs");
  host = await startWorkers([
    {
      name: "gateway",
      vars: {
        UPSTREAM_URL: policy.url,
        POLAR_SIGNING_KEY: SIGNING_KEY,
        POLAR_ADMIN_TOKEN: ADMIN,
        JOBS_QUEUE_URL: queueUrl,
        STORE: "s3",
        S3_BUCKET: s3.bucket,
        S3_PREFIX: "polar",
        S3_ENDPOINT: s3.endpoint,
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
      },
    },
  ]);
  store = new S3Store({ bucket: s3.bucket, prefix: "polar", client: s3.client });
  runner = await startRunner({
    queue: new SqsQueue({ url: queueUrl, client: sqs.client }),
    store,
    proxyUrl: host.url,
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
  await host?.dispose();
  await Promise.all([policy?.close(), s3?.stop(), sqs?.stop()]);
  if (root) await rm(root, { recursive: true, force: true });
});

function runExample(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, "examples/trainer-submit.ts"), ...args], {
      cwd: root,
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

describe("trainer loop through the Worker", () => {
  it("submits, runs, captures through the Worker and downloads the shard it presigned", async () => {
    const { code, out } = await runExample([
      ...["--proxy", host.url, "--admin-token", ADMIN, "--task-id", "count-lines", "--as", "loop-count"],
      ...["--timeout-s", "60"],
    ]);
    expect(code, out).toBe(0);
    expect(out).toMatch(
      /completed: 2 COMPLETED, 0 TIMEOUT, 0 ERROR; shard trajectories\/loop-count\.parquet/,
    );
    expect(out.split("\n").filter((l) => /^row .*status=COMPLETED .*trainable=[1-9]/.test(l)).length).toBe(2);
    // The model calls went through the Worker: its captures are in the store, one list per session.
    for (const session of ["loop-count-0", "loop-count-1"]) {
      expect((await store.list(keys.capturesOfSession("loop-count", session))).length).toBeGreaterThan(1);
    }
  });
});

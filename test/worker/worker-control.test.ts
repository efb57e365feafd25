import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
import { keys } from "../../shared/keys.ts";
import { SessionJob } from "../../shared/schemas/task.ts";
import { S3Store } from "../../shared/store/s3-store.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { type StartedSqs, startSqs } from "../support/sqs.ts";
import { sdkPresignSignature } from "./sigv4-check.ts";
import { startWorkers, type WorkerHost } from "./worker-host.ts";

// The task control API inside workerd: SQS (local-aws-sqs) through the Worker's own SigV4 sender,
// the store on s3rver, presigned shard URLs a plain client can download; and on an R2 binding.
const ADMIN = "worker-admin-token";
let s3: RunningS3rver;
let sqs: StartedSqs;
let queueUrl: string;
let host: WorkerHost;
let store: S3Store;

beforeAll(async () => {
  [s3, sqs] = await Promise.all([startS3rver({ bucket: "worker-control" }), startSqs()]);
  queueUrl = await sqs.createQueue("worker-jobs");
  store = new S3Store({ bucket: s3.bucket, prefix: "ctl", client: s3.client });
  const common = {
    UPSTREAM_URL: "http://127.0.0.1:9",
    POLAR_AUTH: "off",
    POLAR_ADMIN_TOKEN: ADMIN,
    JOBS_QUEUE_URL: queueUrl,
    AWS_ACCESS_KEY_ID: "S3RVER",
    AWS_SECRET_ACCESS_KEY: "S3RVER",
  };
  host = await startWorkers([
    {
      name: "ctl-s3",
      vars: { ...common, STORE: "s3", S3_BUCKET: s3.bucket, S3_PREFIX: "ctl", S3_ENDPOINT: s3.endpoint },
    },
    { name: "ctl-r2", vars: { ...common, STORE: "r2" }, r2: true },
  ]);
});

afterAll(async () => {
  await host?.dispose();
  await Promise.all([s3?.stop(), sqs?.stop()]);
});

const call = (worker: string, method: string, path: string, body?: unknown) =>
  host.fetch(worker, path, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const task = (id: string, samples: number) => ({
  task_id: id,
  instruction: "hello",
  num_samples: samples,
  agent: { harness: "shell", settings: { command: "true" } },
});

async function drain(url: string): Promise<SessionJob[]> {
  const queue = new SqsQueue({ url, client: sqs.client });
  const jobs: SessionJob[] = [];
  for (let batch = await queue.receive(10); batch.length > 0; batch = await queue.receive(10)) {
    for (const m of batch) {
      jobs.push(SessionJob.parse(JSON.parse(m.body)));
      await queue.ack(m);
    }
  }
  return jobs;
}

describe("task control API in the Worker (S3 store, SQS)", () => {
  it("submits to SQS, reports progress and completion, and presigns a downloadable shard", async () => {
    const posted = await call("ctl-s3", "POST", "/v1/tasks", task("wk-1", 12));
    expect(posted.status).toBe(201);
    expect(await posted.json()).toMatchObject({ task_id: "wk-1", enqueued: 12 });
    const jobs = await drain(queueUrl);
    expect(jobs.map((j) => j.sample_index).sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
    expect(jobs[0].task.task_id).toBe("wk-1");
    expect(await store.get(keys.task("wk-1"))).not.toBeNull();

    for (let i = 0; i < 12; i++) {
      const status = i % 4 === 0 ? "ERROR" : "COMPLETED";
      await store.put(keys.result("wk-1", `wk-1-${i}`), JSON.stringify({ status }));
    }
    const shardBytes = new Uint8Array([80, 65, 82, 49, 1, 2, 3, 80, 65, 82, 49]);
    await store.put(keys.shard("wk-1"), shardBytes);
    await store.put(keys.shardJsonl("wk-1"), "{}\n");
    const status = await (await call("ctl-s3", "GET", "/v1/tasks/wk-1")).json();
    expect(status).toMatchObject({
      state: "completed",
      counts: { finished: 12, pending: 0, COMPLETED: 9, ERROR: 3 },
      shard_key: "trajectories/wk-1.parquet",
    });

    const listing = await (await call("ctl-s3", "GET", "/v1/tasks/wk-1/trajectories")).json();
    expect(listing.results).toHaveLength(12);
    expect(listing.shard.url).toMatch(/X-Amz-Signature=/);
    const download = await fetch(listing.shard.url);
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(shardBytes);
    // s3rver does not check V4 signatures: the SDK's signer must compute the same one.
    const url = new URL(listing.shard.url);
    expect(url.searchParams.get("X-Amz-Expires")).toBe("3600");
    const creds = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
    expect(url.searchParams.get("X-Amz-Signature")).toBe(await sdkPresignSignature(listing.shard.url, creds));
  });

  it("cancels with a marker in the store", async () => {
    await call("ctl-s3", "POST", "/v1/tasks", task("wk-cancel", 1));
    await drain(queueUrl);
    expect((await call("ctl-s3", "DELETE", "/v1/tasks/wk-cancel")).status).toBe(202);
    expect(await store.get(keys.cancel("wk-cancel"))).not.toBeNull();
    expect((await (await call("ctl-s3", "GET", "/v1/tasks/wk-cancel")).json()).state).toBe("cancelled");
  });

  it("refuses calls without the admin token and serves /openapi.json", async () => {
    const res = await host.fetch("ctl-s3", "/v1/tasks", {
      method: "POST",
      body: JSON.stringify(task("x", 1)),
    });
    expect(res.status).toBe(401);
    const doc = await (await host.fetch("ctl-s3", "/openapi.json")).json();
    expect(Object.keys(doc.paths)).toContain("/v1/tasks/{id}/trajectories");
  });
});

describe("task control API in the Worker (R2 binding)", () => {
  it("stores the task in R2 and lists keys without URLs (a binding cannot presign)", async () => {
    expect((await call("ctl-r2", "POST", "/v1/tasks", task("wk-r2", 2))).status).toBe(201);
    expect(await drain(queueUrl)).toHaveLength(2);
    const bucket = await host.mf.getR2Bucket("CAPTURES", "ctl-r2");
    await bucket.put(keys.shard("wk-r2"), "PAR1");
    await bucket.put(keys.shardJsonl("wk-r2"), "{}\n");
    expect(await bucket.get(keys.task("wk-r2"))).not.toBeNull();
    const listing = await (await call("ctl-r2", "GET", "/v1/tasks/wk-r2/trajectories")).json();
    expect(listing).toMatchObject({
      complete: true,
      shard: { key: "trajectories/wk-r2.parquet", url: null },
      url_expires_in: null,
    });
  });
});

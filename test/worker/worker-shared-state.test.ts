import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { S3Store } from "../../shared/store/s3-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { readCaptures } from "../support/proxy.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { startWorkers, type WorkerHost } from "./worker-host.ts";

// A Node proxy and the Worker (workerd) on one S3 store: the replica set and version a trainer
// sets through either one route and stamp the next call through the other (docs/control-api.md
// "Where this state lives"). Before, the Worker answered these routes 501 and each proxy kept its own.
const KEY = "worker-shared-signing-key";
const CONTROL = "worker-shared-control";
const PREFIX = "fleet";
let s3: RunningS3rver;
let store: S3Store;
let a: PolicyServer;
let b: PolicyServer;
let host: WorkerHost;
let node: RunningProxy;

beforeAll(async () => {
  [s3, a, b] = await Promise.all([startS3rver({ bucket: "worker-shared" }), startPolicy(), startPolicy()]);
  store = new S3Store({ bucket: s3.bucket, prefix: PREFIX, client: s3.client });
  host = await startWorkers([
    {
      name: "edge",
      vars: {
        UPSTREAM_URL: a.url,
        POLAR_SIGNING_KEY: KEY,
        POLAR_CONTROL_TOKEN: CONTROL,
        // The control API needs a queue; nothing here submits a task, so it is never called.
        JOBS_QUEUE_URL: "http://127.0.0.1:9/000000000000/unused",
        STORE: "s3",
        S3_BUCKET: s3.bucket,
        S3_PREFIX: PREFIX,
        S3_ENDPOINT: s3.endpoint,
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
      },
    },
  ]);
  node = await startNodeProxy({
    upstreamUrl: a.url,
    store,
    port: 0,
    signingKey: KEY,
    log: () => {},
    control: { jobs: new MemoryQueue(), controlToken: CONTROL },
  });
});

afterAll(async () => {
  await host?.dispose();
  await node?.close();
  await Promise.all([a, b].map((p) => p?.close().catch(() => undefined)));
  await s3?.stop();
});

type Via = (path: string, init: RequestInit) => Promise<Response>;
const viaWorker: Via = (path, init) => host.fetch("edge", path, init);
const viaNode: Via = (path, init) => fetch(`${node.url}${path}`, init);

async function control(via: Via, method: string, path: string, body: unknown) {
  const res = await via(path, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${CONTROL}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.text() };
}

let n = 0;
async function captureOfOneCall(via: Via) {
  const taskId = `ws-task-${n}`;
  const sessionId = `ws-session-${n++}`;
  const token = await mintSessionToken({ sessionId, taskId, ttlSeconds: 600 }, KEY);
  const res = await via("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hello" }] }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
  const [capture] = await readCaptures(store, taskId, sessionId);
  return capture;
}

describe("a trainer's replicas and version, shared by a Node proxy and the Worker", () => {
  it("set through the Node proxy, used by the Worker's next call", async () => {
    expect((await control(viaNode, "PUT", "/v1/replicas", { urls: [b.url] })).status).toBe(200);
    expect((await control(viaNode, "PUT", "/v1/policy-version", { version: 3 })).status).toBe(200);
    expect(await captureOfOneCall(viaWorker)).toMatchObject({
      replica: b.url,
      policy_version: "3",
      policy_version_source: "trainer",
    });
  });

  it("set through the Worker, used by the Node proxy's next call", async () => {
    const put = await control(viaWorker, "PUT", "/v1/replicas", { urls: [a.url] });
    expect(put.status, put.body).toBe(200);
    expect((await control(viaWorker, "PUT", "/v1/policy-version", { version: 4 })).status).toBe(200);
    expect(await captureOfOneCall(viaNode)).toMatchObject({
      replica: a.url,
      policy_version: "4",
      policy_version_source: "trainer",
    });
    // The Worker itself, on a later request (any isolate), routes and stamps the same.
    expect(await captureOfOneCall(viaWorker)).toMatchObject({ replica: a.url, policy_version: "4" });
  });
});

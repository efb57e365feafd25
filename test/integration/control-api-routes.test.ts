import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { submitTasks } from "../../batch-runner/submit.ts";
import { createProxyApp } from "../../proxy-worker/app.ts";
import type { ControlDeps } from "../../proxy-worker/control/control-deps.ts";
import { isValidId } from "../../shared/ids.ts";
import { keys } from "../../shared/keys.ts";
import { SessionJob, TaskRequest } from "../../shared/schemas/task.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { sessionIdsFor, submitTask } from "../../shared/tasks/submit-task.ts";

// The control API's semantics on the in-process app (memory store and queue); the same routes run
// against SQS and S3 in control-api-e2e.test.ts and in the Worker in test/worker/worker-control.test.ts.
const ADMIN = "admin-secret-123";

function setup(extra: Partial<ControlDeps> = {}) {
  const store = new MemoryStore();
  const queue = new MemoryQueue();
  const app = createProxyApp({
    store,
    upstream: {
      baseUrl: "http://127.0.0.1:9",
      fetch: (() => Promise.reject(new Error("no upstream"))) as typeof fetch,
    },
    auth: "off",
    log: () => {},
    control: { jobs: queue, adminToken: ADMIN, ...extra },
  });
  const call = (method: string, path: string, body?: unknown, token: string | null = ADMIN) =>
    app.request(path, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
  return { store, queue, app, call };
}

const taskInput = (id: string, extra: Record<string, unknown> = {}) => ({
  task_id: id,
  instruction: "do it",
  num_samples: 3,
  agent: { harness: "shell", settings: { command: "true" } },
  ...extra,
});

function result(taskId: string, sessionId: string, status: string, sampleIndex: number) {
  return JSON.stringify({ v: 1, task_id: taskId, session_id: sessionId, sample_index: sampleIndex, status });
}

describe("POST /v1/tasks", () => {
  it("stores the task with defaults applied and enqueues one SessionJob per sample", async () => {
    const { store, queue, call } = setup();
    const res = await call("POST", "/v1/tasks", taskInput("t-post"));
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body).toMatchObject({
      task_id: "t-post",
      enqueued: 3,
      skipped: 0,
      status_url: "/v1/tasks/t-post",
    });
    expect(body.session_ids).toEqual(["t-post-0", "t-post-1", "t-post-2"]);
    const stored = JSON.parse(new TextDecoder().decode((await store.get(keys.task("t-post"))) as Uint8Array));
    expect(stored).toMatchObject({
      task_id: "t-post",
      timeout_seconds: 1800,
      runtime: { backend: "bwrap" },
    });
    expect(stored.submitted_at).toBe(body.submitted_at);
    const messages = await queue.receive(10);
    const jobs = messages.map((m) => SessionJob.parse(JSON.parse(m.body)));
    expect(jobs.map((j) => [j.session_id, j.sample_index])).toEqual([
      ["t-post-0", 0],
      ["t-post-1", 1],
      ["t-post-2", 2],
    ]);
  });

  it("re-enqueues only sessions without a result on an identical resubmission, refuses a changed one", async () => {
    const { store, queue, call } = setup();
    await call("POST", "/v1/tasks", taskInput("t-again"));
    await queue.receive(10);
    await store.put(keys.result("t-again", "t-again-1"), result("t-again", "t-again-1", "COMPLETED", 1));
    const again = await call("POST", "/v1/tasks", taskInput("t-again"));
    expect(again.status).toBe(201);
    expect(await again.json()).toMatchObject({ enqueued: 2, skipped: 1 });
    const changed = await call("POST", "/v1/tasks", taskInput("t-again", { instruction: "something else" }));
    expect(changed.status).toBe(409);
    expect((await changed.json()).error.message).toMatch(/already submitted with a different request/);
  });

  it("answers 400 naming the bad fields, for bad JSON too, and enqueues nothing", async () => {
    const { queue, call } = setup();
    const bad = await call("POST", "/v1/tasks", {
      task_id: "../x",
      instruction: 5,
      agent: { harness: "nope" },
    });
    expect(bad.status).toBe(400);
    const message = (await bad.json()).error.message;
    expect(message).toMatch(/task_id/);
    expect(message).toMatch(/instruction/);
    expect(message).toMatch(/agent\.harness/);
    const notJson = await call("POST", "/v1/tasks", "{nope");
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.message).toMatch(/JSON/i);
    expect(await queue.receive(10)).toEqual([]);
  });

  it("answers 413 for a task body over 1 MiB", async () => {
    const { queue, call } = setup();
    const res = await call(
      "POST",
      "/v1/tasks",
      taskInput("t-big", { instruction: "x".repeat(1024 * 1024 + 1) }),
    );
    expect(res.status).toBe(413);
    expect((await res.json()).error.message).toMatch(/at most 1048576 bytes/);
    expect(await queue.receive(10)).toEqual([]);
  });

  it("with a control token: accepts every key of its rotation list, refuses the admin token", async () => {
    const { call } = setup({ controlToken: "ctl-current, ctl-next" });
    expect((await call("GET", "/v1/tasks/x", undefined, "ctl-current")).status).toBe(404);
    expect((await call("GET", "/v1/tasks/x", undefined, "ctl-next")).status).toBe(404);
    expect((await call("GET", "/v1/tasks/x", undefined, ADMIN)).status).toBe(401);
    expect((await call("GET", "/v1/tasks/x", undefined, "ctl-current,ctl-next")).status).toBe(401);
  });

  it("store failures name no internal location in the answer", async () => {
    const { store, call } = setup();
    store.putIfAbsent = async () => {
      throw new Error("PUT s3://private-bucket/polar/tasks/leaky.json failed");
    };
    const res = await call("POST", "/v1/tasks", taskInput("leaky"));
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(text).toMatch(/submitting leaky failed/);
    expect(text).not.toContain("private-bucket");
  });

  it("requires the admin token on every control route", async () => {
    const { call } = setup();
    for (const [method, path] of [
      ["POST", "/v1/tasks"],
      ["GET", "/v1/tasks/x"],
      ["DELETE", "/v1/tasks/x"],
      ["GET", "/v1/tasks/x/trajectories"],
    ]) {
      const none = await call(method, path, method === "POST" ? taskInput("x") : undefined, null);
      expect(none.status, `${method} ${path}`).toBe(401);
      const wrong = await call(method, path, method === "POST" ? taskInput("x") : undefined, "wrong");
      expect(wrong.status, `${method} ${path}`).toBe(401);
    }
  });
});

describe("GET /v1/tasks/{id} and /trajectories, DELETE /v1/tasks/{id}", () => {
  it("counts results by status and reports completion with the shard key once the shard is written", async () => {
    const { store, call } = setup({ presignGet: async (key, s) => `https://signed.example/${key}?ttl=${s}` });
    expect((await call("GET", "/v1/tasks/t-status")).status).toBe(404);
    await call("POST", "/v1/tasks", taskInput("t-status"));
    let status = await (await call("GET", "/v1/tasks/t-status")).json();
    expect(status).toMatchObject({
      state: "queued",
      num_samples: 3,
      counts: { finished: 0, pending: 3 },
      shard_key: null,
    });

    await store.put(keys.result("t-status", "t-status-0"), result("t-status", "t-status-0", "COMPLETED", 0));
    await store.put(keys.result("t-status", "t-status-1"), result("t-status", "t-status-1", "TIMEOUT", 1));
    status = await (await call("GET", "/v1/tasks/t-status")).json();
    expect(status).toMatchObject({
      state: "running",
      counts: { finished: 2, pending: 1, COMPLETED: 1, TIMEOUT: 1 },
    });

    await store.put(keys.result("t-status", "t-status-2"), "not json");
    await store.put(keys.shard("t-status"), "PAR1");
    status = await (await call("GET", "/v1/tasks/t-status")).json();
    expect(status.state).toBe("running"); // the JSONL twin is written last: without it the shard may be partial
    await store.put(keys.shardJsonl("t-status"), "{}\n");
    status = await (await call("GET", "/v1/tasks/t-status")).json();
    expect(status).toMatchObject({
      state: "completed",
      counts: { finished: 3, pending: 0, COMPLETED: 1, TIMEOUT: 1, ERROR: 0, unreadable: 1 },
      shard_key: "trajectories/t-status.parquet",
      shard_jsonl_key: "trajectories/t-status.jsonl",
    });

    const listing = await (await call("GET", "/v1/tasks/t-status/trajectories")).json();
    expect(listing).toMatchObject({
      complete: true,
      shard: {
        key: "trajectories/t-status.parquet",
        url: "https://signed.example/trajectories/t-status.parquet?ttl=3600",
      },
      url_expires_in: 3600,
    });
    expect(listing.results.map((r: { session_id: string }) => r.session_id)).toEqual([
      "t-status-0",
      "t-status-1",
      "t-status-2",
    ]);
  });

  it("writes the cancel marker once and reports the task cancelled", async () => {
    const { store, call } = setup();
    expect((await call("DELETE", "/v1/tasks/t-none")).status).toBe(404);
    await call("POST", "/v1/tasks", taskInput("t-cancel"));
    const first = await call("DELETE", "/v1/tasks/t-cancel");
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ cancel_key: "cancel/t-cancel", newly_cancelled: true });
    expect(await store.get(keys.cancel("t-cancel"))).not.toBeNull();
    expect(await (await call("DELETE", "/v1/tasks/t-cancel")).json()).toMatchObject({
      newly_cancelled: false,
    });
    const status = await (await call("GET", "/v1/tasks/t-cancel")).json();
    expect(status).toMatchObject({ state: "cancelled", cancelled: true });
    const listing = await (await call("GET", "/v1/tasks/t-cancel/trajectories")).json();
    expect(listing).toMatchObject({ complete: false, shard: null, results: [], url_expires_in: null });
  });

  it("is running once a session's harness started, before any result", async () => {
    const { store, call } = setup();
    await call("POST", "/v1/tasks", taskInput("t-start"));
    await store.put(keys.started("t-start", "t-start-1"), '{"attempt":1}');
    const status = await (await call("GET", "/v1/tasks/t-start")).json();
    expect(status).toMatchObject({ state: "running", counts: { started: 1, finished: 0, pending: 3 } });
    // A session that ended without starting (skipped after a cancel) counts as started, not twice.
    await store.put(keys.result("t-start", "t-start-1"), result("t-start", "t-start-1", "COMPLETED", 1));
    await store.put(keys.result("t-start", "t-start-2"), result("t-start", "t-start-2", "ERROR", 2));
    const later = await (await call("GET", "/v1/tasks/t-start")).json();
    expect(later.counts).toMatchObject({ started: 2, finished: 2, pending: 1 });
  });

  it("stays cancelled once the cancelled sessions land and the shard is written", async () => {
    const { store, call } = setup();
    await call("POST", "/v1/tasks", taskInput("t-cancel-done", { num_samples: 1 }));
    expect((await call("DELETE", "/v1/tasks/t-cancel-done")).status).toBe(202);
    await store.put(
      keys.result("t-cancel-done", "t-cancel-done-0"),
      result("t-cancel-done", "t-cancel-done-0", "ERROR", 0),
    );
    await store.put(keys.shardJsonl("t-cancel-done"), "");
    const status = await (await call("GET", "/v1/tasks/t-cancel-done")).json();
    expect(status).toMatchObject({
      state: "cancelled",
      cancelled: true,
      shard_jsonl_key: "trajectories/t-cancel-done.jsonl",
    });
  });

  it("refuses to cancel a completed task (409), which stays completed", async () => {
    const { store, call } = setup();
    await call("POST", "/v1/tasks", taskInput("t-done", { num_samples: 1 }));
    await store.put(keys.result("t-done", "t-done-0"), result("t-done", "t-done-0", "COMPLETED", 0));
    await store.put(keys.shardJsonl("t-done"), "{}\n");
    const res = await call("DELETE", "/v1/tasks/t-done");
    expect(res.status).toBe(409);
    expect((await res.json()).error.message).toBe(
      "task t-done already completed: there is nothing to cancel",
    );
    expect(await store.get(keys.cancel("t-done"))).toBeNull();
    expect((await (await call("GET", "/v1/tasks/t-done")).json()).state).toBe("completed");
  });

  it("answers 400 for an id that could escape its key prefix", async () => {
    const { call } = setup();
    const res = await call("GET", "/v1/tasks/..%2Fsecrets");
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/id/);
  });
});

describe("/openapi.json and the provider routes", () => {
  it("documents the operations with the admin security scheme", async () => {
    const { app } = setup();
    const doc = await (await app.request("/openapi.json")).json();
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/v1/policy-version",
      "/v1/replicas",
      "/v1/tasks",
      "/v1/tasks/{id}",
      "/v1/tasks/{id}/trajectories",
    ]);
    expect(Object.keys(doc.paths["/v1/tasks/{id}"]).sort()).toEqual(["delete", "get"]);
    expect(Object.keys(doc.paths["/v1/replicas"]).sort()).toEqual(["delete", "get", "post", "put"]);
    expect(Object.keys(doc.paths["/v1/policy-version"]).sort()).toEqual(["get", "put"]);
    expect(doc.components.securitySchemes.adminToken).toMatchObject({ type: "http", scheme: "bearer" });
    const body = doc.paths["/v1/tasks"].post.requestBody.content["application/json"].schema;
    expect(JSON.stringify(body)).toContain("num_samples");
  });

  it("is absent without the control dep, and the provider routes still answer", async () => {
    const app = createProxyApp({
      store: new MemoryStore(),
      upstream: {
        baseUrl: "http://127.0.0.1:9",
        fetch: (() => Promise.reject(new Error("x"))) as typeof fetch,
      },
      auth: "off",
      log: () => {},
    });
    expect((await app.request("/v1/tasks", { method: "POST", body: "{}" })).status).toBe(404);
    expect((await app.request("/healthz")).status).toBe(200);
  });
});

describe("shared submitTask agrees with polar submit", () => {
  it("derives the documented session ids, short and overlong", async () => {
    // The reference form (docs/architecture.md): `${task_id}-${i}`, or for an id too long for that,
    // a 100-character prefix, 16 hex of SHA-256(task_id) and the index.
    const reference = (taskId: string, i: number) => {
      const plain = `${taskId}-${i}`;
      if (isValidId(plain)) return plain;
      const hash = createHash("sha256").update(taskId).digest("hex").slice(0, 16);
      return `${taskId.slice(0, 100).replace(/[.-]+$/, "")}-${hash}-${i}`;
    };
    const long = `t${"x".repeat(125)}`;
    for (const id of ["t1", long]) {
      expect(await sessionIdsFor(id, 3)).toEqual([0, 1, 2].map((i) => reference(id, i)));
    }
  });

  it("stores a task batch-runner accepts as identical (and the reverse)", async () => {
    const store = new MemoryStore();
    const task = TaskRequest.parse(taskInput("t-both"));
    await submitTask(store, new MemoryQueue(), task);
    const out = await submitTasks(store, new MemoryQueue(), [task]);
    expect(out).toMatchObject({ tasks: 1, enqueued: 3 });
    const other = TaskRequest.parse(taskInput("t-other"));
    await submitTasks(store, new MemoryQueue(), [other]);
    expect((await submitTask(store, new MemoryQueue(), other)).enqueued).toBe(3);
  });
});

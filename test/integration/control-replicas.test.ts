import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { createProxyApp } from "../../proxy-worker/app.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { oneSessionCall } from "../support/proxy.ts";

// Engines the trainer owns (docs/control-api.md "Engines and versions the trainer owns"): replicas
// registered, replaced and removed on a running Node proxy through the control API, real dry-run
// policy servers as the engines, and the policy version a trainer sets landing in captures.
const KEY = "control-replicas-signing-key";
const CONTROL = "control-replicas-token";

let a: PolicyServer;
let b: PolicyServer;
let c: PolicyServer;
let proxy: RunningProxy;
const store = new MemoryStore();

beforeAll(async () => {
  [a, b, c] = await Promise.all([startPolicy(), startPolicy(), startPolicy()]);
  proxy = await startNodeProxy({
    upstreamUrl: a.url,
    store,
    port: 0,
    signingKey: KEY,
    log: () => {},
    routing: { probeIntervalMs: 100 },
    control: { jobs: new MemoryQueue(), controlToken: CONTROL },
  });
});
afterAll(async () => {
  await proxy?.close();
  await Promise.all([a, b, c].map((p) => p?.close().catch(() => undefined)));
});

/** Every field any of the routes answers with (each test reads the ones its route sends). */
interface Answer {
  error: { message: string };
  replicas: { url: string; index: number; origin: string; healthy: boolean; in_flight: number }[];
  added?: string[];
  removed?: string[];
  version?: string | null;
  set_by?: string;
  previous?: string | null;
}

async function control(method: string, path: string, body?: unknown, token: string | null = CONTROL) {
  const res = await fetch(`${proxy.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Answer };
}

const urls = async () =>
  ((await control("GET", "/v1/replicas")).body.replicas as { url: string }[]).map((r) => r.url);

/** One model call in a session of its own (its own task, so each is placed afresh); its capture. */
async function oneCall() {
  const call = await oneSessionCall(proxy.url, store, KEY, "replica");
  expect(call.status).toBe(200);
  return call.capture as CaptureRecord;
}

/** A port nothing listens on: taken, then given back. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe("the control token and strict bodies", () => {
  it("answers 401 without the control token, and changes nothing", async () => {
    expect((await control("GET", "/v1/replicas", undefined, null)).status).toBe(401);
    expect((await control("POST", "/v1/replicas", { url: b.url }, "wrong-token")).status).toBe(401);
    expect((await control("DELETE", "/v1/replicas", { url: a.url }, null)).status).toBe(401);
    expect((await control("PUT", "/v1/policy-version", { version: 7 }, "wrong-token")).status).toBe(401);
    expect(await urls()).toEqual([a.url]);
    expect((await control("GET", "/v1/policy-version")).body.version).toBeNull();
  });

  it("refuses unknown fields and bad values with a 400 naming them", async () => {
    const extra = await control("POST", "/v1/replicas", { url: b.url, weight: 2 });
    expect(extra.status).toBe(400);
    expect(extra.body.error.message).toMatch(/weight/);
    const scheme = await control("POST", "/v1/replicas", { url: "file:///etc/passwd" });
    expect(scheme.status).toBe(400);
    expect(scheme.body.error.message).toMatch(/url: must be an http\(s\) URL/);
    const creds = await control("POST", "/v1/replicas", { url: "http://user:pw@127.0.0.1:1" });
    expect(creds.status).toBe(400);
    expect((await control("PUT", "/v1/replicas", { urls: [] })).status).toBe(400);
    const dup = await control("PUT", "/v1/replicas", { urls: [a.url, `${a.url}/`] });
    expect(dup.status).toBe(400);
    expect(dup.body.error.message).toMatch(/listed twice/);
    for (const bad of [{ version: 1, step: 1 }, { version: -1 }, { version: 1.5 }, { version: "3" }, {}]) {
      const res = await control("PUT", "/v1/policy-version", bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.message).toMatch(/version|step/);
    }
    expect(await urls()).toEqual([a.url]);
  });
});

describe("registering, replacing and removing replicas at runtime", () => {
  it("refuses an unreachable replica with a message naming it, and keeps the set", async () => {
    const dead = await closedPortUrl();
    const res = await control("POST", "/v1/replicas", { url: dead });
    expect(res.status).toBe(422);
    expect(res.body.error.message).toContain(`replica ${dead} is not reachable`);
    const replace = await control("PUT", "/v1/replicas", { urls: [b.url, dead] });
    expect(replace.status).toBe(422);
    expect(replace.body.error.message).toContain(dead);
    expect(await urls()).toEqual([a.url]);
  });

  it("routes the next sessions to a registered replica, without a restart", async () => {
    const before = await oneCall();
    expect(before.replica).toBe(a.url);
    const res = await control("POST", "/v1/replicas", { url: `${b.url}/` });
    expect(res.status).toBe(201);
    expect(res.body.added).toEqual([b.url]);
    expect(res.body.replicas).toEqual([
      { url: a.url, index: 0, origin: "configured", healthy: true, in_flight: 0 },
      { url: b.url, index: 1, origin: "registered", healthy: true, in_flight: 0 },
    ]);
    // Registering it again changes nothing.
    expect((await control("POST", "/v1/replicas", { url: b.url })).status).toBe(200);
    b.resetCounts();
    const captures = [];
    for (let i = 0; i < 8; i++) captures.push(await oneCall());
    const onB = captures.filter((x) => x.replica === b.url).length;
    // Affinity's load bound spreads 8 fresh sessions over both replicas.
    expect(onB).toBeGreaterThanOrEqual(3);
    expect(b.counts.chat_completions).toBe(onB);
    expect(captures.filter((x) => x.replica === a.url).length).toBe(8 - onB);
  });

  it("stops routing to a removed replica, and keeps the last one", async () => {
    const res = await control("DELETE", "/v1/replicas", { url: a.url });
    expect(res.status).toBe(200);
    expect(res.body.removed).toEqual([a.url]);
    a.resetCounts();
    for (let i = 0; i < 4; i++) expect((await oneCall()).replica).toBe(b.url);
    expect(a.counts.chat_completions).toBe(0);
    // Token counting asks a replica in the set too, not the configured one that left it.
    b.resetCounts();
    const token = await mintSessionToken(
      { sessionId: "count-session", taskId: "count-task", ttlSeconds: 600 },
      KEY,
    );
    const count = await fetch(`${proxy.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(count.status).toBe(200);
    expect([a.counts.tokenize, b.counts.tokenize]).toEqual([0, 1]);
    const last = await control("DELETE", "/v1/replicas", { url: b.url });
    expect(last.status).toBe(409);
    expect(last.body.error.message).toContain(`${b.url} is the only replica`);
    const unknown = await control("DELETE", "/v1/replicas", { url: a.url });
    expect(unknown.status).toBe(404);
  });

  it("replaces the whole set in one call, keeping the replicas it names", async () => {
    const both = await control("PUT", "/v1/replicas", { urls: [c.url, b.url] });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ added: [c.url], removed: [] });
    const onlyC = await control("PUT", "/v1/replicas", { urls: [c.url] });
    expect(onlyC.body).toMatchObject({ added: [], removed: [b.url] });
    expect(await urls()).toEqual([c.url]);
    b.resetCounts();
    for (let i = 0; i < 3; i++) expect((await oneCall()).replica).toBe(c.url);
    expect(b.counts.chat_completions).toBe(0);
  });

  it("health-checks a registered replica like a configured one", async () => {
    const extra = await startPolicy();
    expect((await control("POST", "/v1/replicas", { url: extra.url })).status).toBe(201);
    await extra.close();
    const deadline = Date.now() + 5_000;
    let listed: Answer["replicas"] = [];
    while (Date.now() < deadline) {
      listed = (await control("GET", "/v1/replicas")).body.replicas;
      if (listed.find((r) => r.url === extra.url)?.healthy === false) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed.find((r) => r.url === extra.url)?.healthy).toBe(false);
    // Drained: fresh sessions go to the healthy replica.
    for (let i = 0; i < 3; i++) expect((await oneCall()).replica).toBe(c.url);
    expect((await control("DELETE", "/v1/replicas", { url: extra.url })).status).toBe(200);
  });
});

describe("the policy version a trainer sets", () => {
  it("lands in captures as the trainer's, and never goes backwards", async () => {
    const set = await control("PUT", "/v1/policy-version", { version: 3 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ version: "3", set_by: "trainer", previous: null });
    const capture = await oneCall();
    expect(capture).toMatchObject({
      policy_version: "3",
      policy_version_end: "3",
      policy_version_source: "trainer",
    });
    const back = await control("PUT", "/v1/policy-version", { version: 2 });
    expect(back.status).toBe(409);
    expect(back.body.error.message).toContain("policy version 2 is lower than the current 3");
    // The same version again is a retry, not a step back.
    expect((await control("PUT", "/v1/policy-version", { version: 3 })).status).toBe(200);
    expect((await control("PUT", "/v1/policy-version", { version: 4 })).body.previous).toBe("3");
    expect(await control("GET", "/v1/policy-version")).toMatchObject({
      status: 200,
      body: { version: "4", set_by: "trainer" },
    });
    expect((await oneCall()).policy_version).toBe("4");
  });
});

/** A replica that reports its weights at `/weight_info` (vLLM's RL endpoints), sampling through `policy`. */
async function versionedEngine(policy: PolicyServer, version: string) {
  const server = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.url === "/weight_info") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ weight_version: version }));
      return;
    }
    const upstream = await fetch(`${policy.url}${req.url}`, {
      method: req.method,
      headers: { "content-type": "application/json" },
      body: req.method === "GET" ? undefined : Buffer.concat(chunks),
    });
    res.writeHead(upstream.status, {
      "content-type": upstream.headers.get("content-type") ?? "application/json",
    });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("a registered replica that reports its own version", () => {
  it("stamps the engine's version on its captures, over the trainer's", async () => {
    const engine = await versionedEngine(c, "engine-7");
    try {
      expect((await control("PUT", "/v1/replicas", { urls: [engine.url] })).status).toBe(200);
      expect((await control("GET", "/v1/policy-version")).body).toMatchObject({ set_by: "trainer" });
      expect(await oneCall()).toMatchObject({
        replica: engine.url,
        policy_version: "engine-7",
        policy_version_source: "engine",
      });
    } finally {
      await control("PUT", "/v1/replicas", { urls: [c.url] });
      await engine.close();
    }
  });
});

describe("a proxy without the control API", () => {
  it("answers 404 saying how to turn it on, not a provider error", async () => {
    const app = createProxyApp({
      store: new MemoryStore(),
      upstream: { baseUrl: a.url, fetch },
      auth: "off",
      log: () => {},
    });
    for (const path of ["/v1/replicas", "/v1/policy-version"]) {
      const res = await app.request(path, { method: "PUT", body: "{}" });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("polar serve");
    }
  });
});

describe("a host without runtime state (the Worker)", () => {
  it("answers 501 naming what to use instead", async () => {
    const app = createProxyApp({
      store: new MemoryStore(),
      upstream: { baseUrl: a.url, fetch },
      auth: "off",
      log: () => {},
      control: { jobs: new MemoryQueue(), controlToken: CONTROL },
    });
    const headers = { authorization: `Bearer ${CONTROL}`, "content-type": "application/json" };
    for (const [method, path, body] of [
      ["GET", "/v1/replicas", undefined],
      ["POST", "/v1/replicas", { url: b.url }],
      ["PUT", "/v1/policy-version", { version: 1 }],
    ] as const) {
      const res = await app.request(path, { method, headers, body: body && JSON.stringify(body) });
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("UPSTREAM_URLS");
    }
  });
});

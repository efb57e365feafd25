import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { FreshRead } from "../../proxy-worker/control/shared-state.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { oneSessionCall } from "../support/proxy.ts";

// Two `polar proxy` processes on one store (docs/control-api.md "Where this state lives"): a
// trainer's replica set and version, set through one, route and stamp the next call through the
// other; versions only go forward across both; a store that cannot be read refuses the call.
const KEY = "shared-state-signing-key";
const CONTROL = "shared-state-control";
const ADMIN = "shared-state-admin";

let a: PolicyServer;
let b: PolicyServer;
let dir: string;
let store: DirectoryStore;
let one: RunningProxy;
let two: RunningProxy;

const start = (s: ObjectStore) =>
  startNodeProxy({
    upstreamUrl: a.url,
    store: s,
    port: 0,
    signingKey: KEY,
    log: () => {},
    adminToken: ADMIN,
    control: { jobs: new MemoryQueue(), controlToken: CONTROL },
  });

beforeAll(async () => {
  [a, b] = await Promise.all([startPolicy(), startPolicy()]);
  dir = mkdtempSync(join(tmpdir(), "polar-shared-state-"));
  store = new DirectoryStore(dir);
  // Each proxy opens the directory itself, as two processes would.
  [one, two] = await Promise.all([start(new DirectoryStore(dir)), start(new DirectoryStore(dir))]);
});
afterAll(async () => {
  await Promise.all([one?.close(), two?.close()]);
  await Promise.all([a, b].map((p) => p?.close().catch(() => undefined)));
  rmSync(dir, { recursive: true, force: true });
});

async function control(proxy: RunningProxy, method: string, path: string, body?: unknown) {
  const res = await fetch(`${proxy.url}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${CONTROL}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const oneCall = (proxy: RunningProxy, from: ObjectStore = store) =>
  oneSessionCall(proxy.url, from, KEY, "shared");

describe("a trainer's replica set and version, shared by two proxies on one store", () => {
  it("set through one proxy route and stamp the next call through the other", async () => {
    expect((await oneCall(two)).capture?.replica).toBe(a.url);
    expect((await control(one, "PUT", "/v1/replicas", { urls: [b.url] })).status).toBe(200);
    expect((await control(one, "PUT", "/v1/policy-version", { version: 5 })).status).toBe(200);
    // The write is in the store before the control call answered.
    expect(JSON.parse(new TextDecoder().decode((await store.get(keys.runtimeReplicas()))!)).urls).toEqual([
      b.url,
    ]);
    const call = await oneCall(two);
    expect(call.capture).toMatchObject({
      replica: b.url,
      policy_version: "5",
      policy_version_end: "5",
      policy_version_source: "trainer",
    });
    expect((await control(two, "GET", "/v1/replicas")).body.replicas).toEqual([
      expect.objectContaining({ url: b.url, origin: "registered" }),
    ]);
    // And back the other way: registered through the second, used by the first.
    expect((await control(two, "POST", "/v1/replicas", { url: a.url })).status).toBe(201);
    expect((await control(two, "DELETE", "/v1/replicas", { url: b.url })).status).toBe(200);
    expect((await oneCall(one)).capture?.replica).toBe(a.url);
  });

  it("keeps versions going forward across proxies", async () => {
    expect((await control(two, "PUT", "/v1/policy-version", { version: 9 })).status).toBe(200);
    const back = await control(one, "PUT", "/v1/policy-version", { version: 8 });
    expect(back.status).toBe(409);
    expect(JSON.stringify(back.body)).toContain("policy version 8 is lower than the current 9");
    expect((await control(one, "GET", "/v1/policy-version")).body).toMatchObject({
      version: "9",
      set_by: "trainer",
    });
    expect((await oneCall(one)).capture?.policy_version).toBe("9");
  });

  it("lets the operator start a new run on every proxy with /admin/policy-version (any version)", async () => {
    const reset = await fetch(`${two.url}/admin/policy-version`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ version: 0 }),
    });
    expect(reset.status).toBe(200);
    expect((await oneCall(one)).capture).toMatchObject({
      policy_version: "0",
      policy_version_source: "proxy",
    });
    expect((await control(one, "PUT", "/v1/policy-version", { version: 1 })).body).toMatchObject({
      previous: "0",
    });
  });

  it("refuses a model call 503 when the store cannot say, before any engine sees it", async () => {
    const broken = new DirectoryStore(dir);
    broken.get = async () => {
      throw new Error("disk gone");
    };
    const proxy = await start(broken);
    try {
      const call = await oneCall(proxy);
      expect(call.status).toBe(503);
      expect(call.text).toContain("could not read the trainer's engine set and policy version");
      expect((await control(proxy, "PUT", "/v1/policy-version", { version: 10 })).status).toBe(503);
    } finally {
      await proxy.close();
    }
  });
});

/** vLLM with its RL routes, whose `/weight_info` fails (as it does while the engine is busy): sampling through `policy`. */
async function engineFailingVersionReads(policy: PolicyServer) {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.url === "/weight_info") {
      res.writeHead(503).end("busy");
      return;
    }
    const upstream = await fetch(`${policy.url}${req.url}`, {
      method: req.method,
      headers: { "content-type": "application/json" },
      body: req.method === "GET" ? undefined : Buffer.concat(chunks),
    });
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("an engine whose version read fails", () => {
  it("leaves the trainer's version on the capture, saying why it is not the engine's", async () => {
    const engine = await engineFailingVersionReads(b);
    try {
      expect((await control(one, "PUT", "/v1/replicas", { urls: [engine.url] })).status).toBe(200);
      const { capture } = await oneCall(two);
      expect(capture).toMatchObject({
        replica: engine.url,
        policy_version: "1",
        policy_version_source: "trainer",
      });
      expect(capture?.policy_version_note).toMatch(/^the engine's \/weight_info read before the call: /);
    } finally {
      await control(one, "PUT", "/v1/replicas", { urls: [a.url] });
      await engine.close();
    }
  });

  it("marks the capture unknown, with the reason, when nobody named a version", async () => {
    const engine = await engineFailingVersionReads(b);
    const own = new MemoryStore();
    const proxy = await startNodeProxy({
      upstreamUrl: engine.url,
      store: own,
      port: 0,
      signingKey: KEY,
      log: () => {},
    });
    try {
      const { capture } = await oneCall(proxy, own);
      expect(capture).toMatchObject({ policy_version: null, policy_version_source: null });
      expect(capture?.policy_version_note).toContain("/weight_info read before the call");
    } finally {
      await proxy.close();
      await engine.close();
    }
  });
});

describe("FreshRead", () => {
  it("never hands a caller a read that began before it arrived, and shares the rest", async () => {
    let reads = 0;
    const gates: Array<() => void> = [];
    const fresh = new FreshRead(
      () =>
        new Promise<number>((resolve) => {
          const read = ++reads;
          gates.push(() => resolve(read));
        }),
    );
    const first = fresh.read();
    // Both arrive while read 1 is under way: they share read 2, which begins once read 1 ends.
    const second = fresh.read();
    const third = fresh.read();
    expect(reads).toBe(1);
    gates[0]();
    expect(await first).toBe(1);
    await Promise.resolve();
    expect(reads).toBe(2);
    gates[1]();
    expect(await second).toBe(2);
    expect(await third).toBe(2);
  });
});

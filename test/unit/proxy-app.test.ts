import { describe, expect, it } from "vitest";
import { createProxyApp } from "../../proxy-worker/app.ts";
import type { ProxyDeps } from "../../proxy-worker/deps.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

const KEY = "unit-test-signing-key";

/** An upstream that must never be reached by the requests in this file: every call is counted. */
function countingUpstream() {
  const calls: string[] = [];
  const fetchFn = (async (input: string | URL | Request) => {
    calls.push(String(input));
    return new Response("{}", { status: 599 });
  }) as typeof fetch;
  return { calls, upstream: { baseUrl: "http://127.0.0.1:9", fetch: fetchFn } };
}

function makeApp(extra: Partial<ProxyDeps> = {}) {
  const up = countingUpstream();
  const app = createProxyApp({ store: new MemoryStore(), upstream: up.upstream, signingKey: KEY, ...extra });
  return { app, calls: up.calls };
}

const chatBody = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });

describe("proxy app: auth", () => {
  it("answers 401 in the provider's shape for a missing, bad or expired token, without an upstream call", async () => {
    const { app, calls } = makeApp();
    const missing = await app.request("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: "{}",
    });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });

    const bad = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: "Bearer not-a-token" },
      body: chatBody,
    });
    expect(bad.status).toBe(401);
    expect((await bad.json()).error.message).toMatch(/not a Polar session token/);

    const expired = await mintSessionToken(
      { sessionId: "s1", taskId: "t1", ttlSeconds: 1, now: Date.now() - 10_000 },
      KEY,
    );
    const late = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${expired}` },
      body: chatBody,
    });
    expect(late.status).toBe(401);
    expect((await late.json()).error.message).toMatch(/expired/);

    const wrongKey = await mintSessionToken({ sessionId: "s1", taskId: "t1" }, "another-key");
    const forged = await app.request(`/s/${wrongKey}/v1/chat/completions`, {
      method: "POST",
      body: chatBody,
    });
    expect(forged.status).toBe(401);
    expect(calls).toEqual([]);
  });

  it("refuses to start without a signing key unless auth is off", () => {
    expect(() => createProxyApp({ store: new MemoryStore(), upstream: countingUpstream().upstream })).toThrow(
      /signing key/,
    );
  });
});

describe("proxy app: input limits and bad input", () => {
  it("answers 413 for a body over the limit, counted as it streams (no content-length)", async () => {
    const { app, calls } = makeApp({ limits: { maxBodyBytes: 1024 } });
    const token = await mintSessionToken({ sessionId: "s1", taskId: "t1" }, KEY);
    const chunk = new TextEncoder().encode("x".repeat(600));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 4) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const req = new Request("http://proxy.test/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(req.headers.get("content-length")).toBeNull();
    const res = await app.request(req);
    expect(res.status).toBe(413);
    expect((await res.json()).error.message).toMatch(/1024 bytes/);
    expect(calls).toEqual([]);
  });

  it("answers 400 for truncated JSON and wrong types, in the provider's shape", async () => {
    const { app, calls } = makeApp({ auth: "off" });
    const truncated = await app.request("/v1/messages", { method: "POST", body: '{"model": "m", "messa' });
    expect(truncated.status).toBe(400);
    expect(await truncated.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    const wrongType = await app.request("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model: 5, messages: "hi" }),
    });
    expect(wrongType.status).toBe(400);
    expect((await wrongType.json()).error).toHaveProperty("message");
    const n2 = await app.request("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model: "m", n: 2, messages: [{ role: "user", content: "x" }] }),
    });
    expect(n2.status).toBe(400);
    expect((await n2.json()).error.message).toMatch(/n=2/);
    expect(calls).toEqual([]);
  });

  it("answers 404 for unknown paths in the shape the header or body suggests", async () => {
    const { app, calls } = makeApp({ auth: "off" });
    const anth = await app.request("/v2/messages", {
      method: "POST",
      headers: { "anthropic-version": "x" },
      body: "{}",
    });
    expect(anth.status).toBe(404);
    expect(await anth.json()).toMatchObject({ type: "error", error: { type: "not_found_error" } });
    const plain = await app.request("/nowhere");
    expect(plain.status).toBe(404);
    expect((await plain.json()).error.message).toMatch(/no route for GET \/nowhere/);
    expect(calls).toEqual([]);
  });
});

describe("proxy app: admin policy version", () => {
  it("updates the configured version only with the admin token", async () => {
    const { app } = makeApp({ adminToken: "adm", policyVersion: "v1" });
    expect(await (await app.request("/healthz")).json()).toMatchObject({ ok: true, policy_version: "v1" });
    const denied = await app.request("/admin/policy-version", {
      method: "POST",
      headers: { authorization: "Bearer nope" },
      body: JSON.stringify({ version: "v2" }),
    });
    expect(denied.status).toBe(401);
    const badBody = await app.request("/admin/policy-version", {
      method: "POST",
      headers: { authorization: "Bearer adm" },
      body: JSON.stringify({ version: "" }),
    });
    expect(badBody.status).toBe(400);
    const ok = await app.request("/admin/policy-version", {
      method: "POST",
      headers: { authorization: "Bearer adm" },
      body: JSON.stringify({ version: 7 }),
    });
    expect(await ok.json()).toEqual({ version: "7" });
    expect(await (await app.request("/healthz")).json()).toMatchObject({ policy_version: "7" });
  });

  it("keeps admin endpoints closed when no admin token is configured", async () => {
    const { app } = makeApp();
    const res = await app.request("/admin/policy-version", { method: "POST", body: '{"version":"x"}' });
    expect(res.status).toBe(404);
  });
});

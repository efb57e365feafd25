import { describe, expect, it } from "vitest";
import { createProxyApp } from "../../proxy-worker/app.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

/**
 * Which answers count against an address: 401s and 404s of requests no credential authenticated.
 * A control-API client with a valid token asking for tasks that do not exist is not counted.
 */
const CONTROL = "control-token-for-the-gate-test";

function app(address: string | null) {
  return createProxyApp({
    store: new MemoryStore(),
    upstream: {
      baseUrl: "http://127.0.0.1:9",
      fetch: (async () => new Response("{}", { status: 599 })) as typeof fetch,
    },
    signingKey: "gate-key",
    adminToken: "admin-token-for-the-gate-test",
    control: { jobs: { url: "memory://jobs", send: async () => {} }, controlToken: CONTROL },
    addressLimit: { perMinute: 2 },
    clientAddress: () => address,
    // A still clock: the bucket does not refill between the calls however slow the machine is.
    clock: () => 1_000_000,
  });
}

describe("per-address gate", () => {
  it("does not count authenticated 404s (control API, admin), counts the rest, then refuses", async () => {
    const a = app("192.0.2.10");
    for (let i = 0; i < 5; i++) {
      const res = await a.request("/v1/tasks/no-such-task", {
        headers: { authorization: `Bearer ${CONTROL}` },
      });
      expect(res.status).toBe(404);
    }
    expect((await a.request("/v1/tasks/x", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await a.request("/admin/policy-version")).status).toBe(401);
    const refused = await a.request("/v1/chat/completions", { method: "POST", body: "{}" });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(await refused.json()).toMatchObject({ error: { type: "requests", code: "rate_limit_exceeded" } });
    // The control client is refused too now: only session tokens are checked without crypto.
    expect(
      (await a.request("/v1/tasks/no-such-task", { headers: { authorization: `Bearer ${CONTROL}` } })).status,
    ).toBe(429);
    expect((await a.request("/healthz")).status).toBe(200);
  });

  it("lets a request through when the host cannot tell its address", async () => {
    const a = app(null);
    for (let i = 0; i < 5; i++) expect((await a.request("/nowhere")).status).toBe(404);
  });
});

describe("Worker vars for fair share", () => {
  const env = {
    UPSTREAM_URL: "http://127.0.0.1:8000",
    POLAR_SIGNING_KEY: "k",
    CAPTURES: { put: async () => null },
  };
  it("ADDRESS_LIMIT_PER_MINUTE defaults to 120 and 0 turns it off; SESSION_* become the session defaults", async () => {
    const { depsFromEnv } = await import("../../proxy-worker/worker-config.ts");
    expect(depsFromEnv(env, fetch).addressLimit).toEqual({ perMinute: 120 });
    expect(depsFromEnv({ ...env, ADDRESS_LIMIT_PER_MINUTE: "0" }, fetch).addressLimit).toBeUndefined();
    expect(
      depsFromEnv({ ...env, SESSION_MAX_IN_FLIGHT: "4", SESSION_TOKENS_PER_MINUTE: "90000" }, fetch)
        .sessionLimits,
    ).toEqual({ maxInFlight: 4, tokensPerMinute: 90_000 });
    expect(() => depsFromEnv({ ...env, SESSION_MAX_IN_FLIGHT: "0" }, fetch)).toThrow(/SESSION_MAX_IN_FLIGHT/);
  });
});

import { describe, expect, it } from "vitest";
import { weakSigningKeyWarning } from "../../cli/flags.ts";
import { createProxyApp } from "../../proxy-worker/app.ts";
import type { ProxyDeps } from "../../proxy-worker/deps.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

const KEY = "unit-test-signing-key-of-32-chars!";

function makeApp(extra: Partial<ProxyDeps> = {}) {
  const lines: string[] = [];
  let now = 1_000;
  const upstream = {
    baseUrl: "http://127.0.0.1:9",
    fetch: (async () => {
      now += 25; // the upstream "takes" 25 ms on the app's clock
      return new Response("{}", { status: 599 });
    }) as unknown as typeof fetch,
  };
  const app = createProxyApp({
    store: new MemoryStore(),
    upstream,
    signingKey: KEY,
    clock: () => now,
    log: (m) => lines.push(m),
    ...extra,
  });
  return { app, lines };
}

const chat = (headers: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
});

describe("proxy --log-requests", () => {
  it("logs one line per call: method, path, provider, session, status, ms", async () => {
    const { app, lines } = makeApp({ logRequests: true });
    const token = await mintSessionToken({ sessionId: "sess-1", taskId: "t1" }, KEY);
    await app.request("/v1/chat/completions", chat({ authorization: `Bearer ${token}` }));
    await app.request("/v1/messages", {
      ...chat({ "x-api-key": "sk-real-secret" }),
      headers: { "anthropic-version": "2023-06-01", "x-api-key": "sk-real-secret" },
    });
    await app.request("/healthz");
    const calls = lines.filter((l) => /^(GET|POST) /.test(l));
    expect(calls).toHaveLength(3);
    expect(calls[0]).toMatch(
      /^POST \/v1\/chat\/completions provider=openai_chat session=sess-1 status=\d{3} \d+ms$/,
    );
    // A key that is not a session token (a real provider key sent by mistake) is never echoed.
    expect(calls[1]).toMatch(/^POST \/v1\/messages provider=anthropic session=\? status=401 \d+ms$/);
    expect(calls.join("\n")).not.toContain("sk-real-secret");
    expect(calls.join("\n")).not.toContain(token);
    expect(calls[2]).toMatch(/^GET \/healthz provider=- session=- status=200 \d+ms$/);
  });

  it("logs nothing per call without the flag", async () => {
    const { app, lines } = makeApp();
    await app.request("/healthz");
    expect(lines).toEqual([]);
  });
});

describe("proxy without the control API", () => {
  it("answers /v1/tasks with a 404 that says how to turn it on", async () => {
    const { app } = makeApp();
    for (const [method, path] of [
      ["POST", "/v1/tasks"],
      ["GET", "/v1/tasks/t1"],
      ["GET", "/openapi.json"],
    ]) {
      const res = await app.request(path, { method, body: method === "POST" ? "{}" : undefined });
      expect(res.status).toBe(404);
      const message = (await res.json()).error.message;
      expect(message).toContain("without the task control API");
      expect(message).toContain("polar serve");
      expect(message).toContain("--jobs-queue");
    }
  });
});

describe("signing key strength", () => {
  it("warns about a short key, not about a long one", () => {
    expect(weakSigningKeyWarning("secret")).toMatch(/POLAR_SIGNING_KEY is 6 characters/);
    expect(weakSigningKeyWarning("a".repeat(64))).toBeNull();
    expect(weakSigningKeyWarning(undefined)).toBeNull();
  });
});

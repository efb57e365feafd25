import { afterAll, describe, expect, it } from "vitest";
import { keys } from "../../shared/keys.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { startFakeUpstream } from "../support/fake-upstream.ts";
import { startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * Issue 41, item 5: under 5,000 tokens a minute, 30 calls of 1 MiB that the engine refused (400)
 * were never throttled and added 22.6 MiB of captures. A failed call now costs its session its
 * request's size (about 4 bytes a token) like the tokens of an answered one, so the bucket stops
 * the flood after the first and the captures it adds are bounded by the session's rate.
 */
const KEY = "failed-calls-key";
const MiB = 1024 * 1024;
const started: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of started.reverse()) await s.close();
});

async function setup() {
  const upstream = await startFakeUpstream((_req, res) => {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        object: "error",
        message:
          "This model's maximum context length is 4096 tokens. However, your request has 262000 input tokens.",
        type: "BadRequestError",
        code: 400,
      }),
    );
  });
  const store = new MemoryStore();
  const proxy: TestProxy = await startProxy({
    upstream: upstream.url,
    signingKey: KEY,
    store,
    log: () => {},
    captureRetry: { baseDelayMs: 1 },
  });
  started.push(upstream, proxy);
  return { upstream, proxy, store };
}

async function capturedBytes(store: MemoryStore, session: string): Promise<{ count: number; bytes: number }> {
  const list = await store.list(keys.capturesOfSession("sec", session));
  let bytes = 0;
  for (const key of list) bytes += (await store.get(key))?.byteLength ?? 0;
  return { count: list.length, bytes };
}

function chat(proxy: TestProxy, token: string, body: unknown) {
  return fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** 1 MiB of varied text (so the capture's gzip cannot make it nothing). */
function bigPrompt(seed: number): string {
  let s = "";
  let x = seed + 1;
  while (s.length < MiB) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    s += `${x.toString(36)} `;
  }
  return s;
}

describe("failed calls are not free", () => {
  it("30 calls of 1 MiB the engine refuses, under 5,000 tokens a minute: one reaches it, the rest get 429", async () => {
    const { upstream, proxy, store } = await setup();
    const token = await mintSessionToken(
      { sessionId: "refused", taskId: "sec", limits: { tokensPerMinute: 5000 } },
      KEY,
    );
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await chat(proxy, token, {
        model: "m",
        messages: [{ role: "user", content: bigPrompt(i) }],
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    expect(statuses[0]).toBe(400);
    expect(statuses.slice(1)).toEqual(Array(29).fill(429));
    expect(upstream.chatCalls).toBe(1);
    const captured = await capturedBytes(store, "refused");
    expect(captured.count).toBe(1);
    expect(captured.bytes).toBeLessThan(1.5 * MiB);
  });

  it("a call the proxy itself refuses (not a valid request) costs its size too", async () => {
    const { upstream, proxy } = await setup();
    const token = await mintSessionToken(
      { sessionId: "invalid", taskId: "sec", limits: { tokensPerMinute: 5000 } },
      KEY,
    );
    // 64 KiB that fails validation: 16,384 tokens' worth read and parsed.
    const bad = await chat(proxy, token, { model: "m", messages: "z".repeat(64 * 1024) });
    expect(bad.status).toBe(400);
    await bad.arrayBuffer();
    const next = await chat(proxy, token, { model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(next.status).toBe(429);
    await next.arrayBuffer();
    expect(upstream.chatCalls).toBe(0);
  });

  it("an answered call is still charged by the engine's usage, not its size", async () => {
    const ok = await startFakeUpstream();
    const okProxy = await startProxy({ upstream: ok.url, signingKey: KEY, log: () => {} });
    started.push(ok, okProxy);
    const token = await mintSessionToken(
      { sessionId: "answered", taskId: "sec", limits: { tokensPerMinute: 5000 } },
      KEY,
    );
    // 40 KiB of prompt answered with a small usage: size alone would be 10,240 tokens.
    for (let i = 0; i < 3; i++) {
      const res = await chat(okProxy, token, {
        model: "m",
        messages: [{ role: "user", content: "w ".repeat(20 * 1024) }],
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
  });
});

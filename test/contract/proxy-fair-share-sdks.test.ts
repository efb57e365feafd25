import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * What a harness's SDK does with a fair-share 429: the official openai and Anthropic SDKs wait the
 * `retry-after-ms` the proxy sent (1 s for a session at its in-flight limit, where their own first
 * backoff is under 0.5 s) and their retry is answered once the session's other call has ended.
 */
const KEY = "fair-share-sdk-key";
const TASK = "sdk";
const SHORT = scriptMessage([`say: ${"one two three four five six seven eight nine ten ".repeat(2)}`]);

let policy: PolicyServer;
let proxy: TestProxy;
const store = new MemoryStore();
beforeAll(async () => {
  policy = await startPolicy({ tokensPerSecond: 40 });
  proxy = await startProxy({
    upstream: policy.url,
    signingKey: KEY,
    store,
    streamMode: "live",
    log: () => {},
  });
});
afterAll(async () => {
  await proxy?.close();
  await policy?.close();
});

/** Starts a streamed call that holds the session's only slot for a few hundred ms. */
async function holdSlot(key: string): Promise<{ done: Promise<string> }> {
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: SHORT }] }),
  });
  expect(res.status).toBe(200);
  // Wrapped: an async function returning the promise itself would wait for the whole stream.
  return { done: res.text() };
}

describe("SDK retries on a fair-share 429", () => {
  it("openai: waits retry-after-ms, then its retry is answered", async () => {
    const key = await mintSessionToken(
      { sessionId: "openai", taskId: TASK, limits: { maxInFlight: 1 } },
      KEY,
    );
    const held = await holdSlot(key);
    const client = new OpenAI({ apiKey: key, baseURL: `${proxy.url}/v1`, maxRetries: 2 });
    const t0 = performance.now();
    const { data, response } = await client.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    const waited = performance.now() - t0;
    expect(response.status).toBe(200);
    expect(data.choices[0].message.role).toBe("assistant");
    expect(waited).toBeGreaterThanOrEqual(1000);
    await held.done;
    // The refused attempt left no capture: the held stream and the answered retry.
    expect(await readCaptures(store, TASK, "openai")).toHaveLength(2);
  });

  it("anthropic: waits retry-after-ms, then its retry is answered", async () => {
    const key = await mintSessionToken(
      { sessionId: "anthropic", taskId: TASK, limits: { maxInFlight: 1 } },
      KEY,
    );
    const held = await holdSlot(key);
    const client = new Anthropic({ apiKey: key, baseURL: proxy.url, maxRetries: 2 });
    const t0 = performance.now();
    const message = await client.messages.create({
      model: "m",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    const waited = performance.now() - t0;
    expect(message.role).toBe("assistant");
    expect(waited).toBeGreaterThanOrEqual(1000);
    await held.done;
    expect(await readCaptures(store, TASK, "anthropic")).toHaveLength(2);
  });
});

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { mintSessionToken } from "../../shared/session-token.ts";
import { startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * Issue 41, item 4: with `max_in_flight: 2`, 12 parallel 8 MiB count_tokens calls of one session
 * all got 200 and the engine had 12 `/tokenize` calls at once. Every route a session can call now
 * goes through its share: count_tokens and model listing are admitted like model calls, and a count
 * costs the session the tokens the engine counted.
 */
const KEY = "count-tokens-limits-key";
const started: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of started.reverse()) await s.close();
});

/** A vLLM-shaped engine whose `/tokenize` and `/v1/models` take 300 ms; it records how many ran at once. */
async function slowEngine() {
  const state = { tokenize: 0, models: 0, atOnce: 0, mostAtOnce: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const kind = req.url === "/tokenize" ? "tokenize" : req.url === "/v1/models" ? "models" : null;
      if (!kind) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end('{"detail":"Not Found"}');
        return;
      }
      state[kind]++;
      state.atOnce++;
      state.mostAtOnce = Math.max(state.mostAtOnce, state.atOnce);
      setTimeout(() => {
        state.atOnce--;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          kind === "tokenize"
            ? JSON.stringify({ count: 1000, max_model_len: 4096, tokens: [] })
            : '{"object":"list","data":[{"id":"m","max_model_len":4096}]}',
        );
      }, 300);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  started.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
  return { url, state };
}

async function setup() {
  const engine = await slowEngine();
  const proxy: TestProxy = await startProxy({ upstream: engine.url, signingKey: KEY, log: () => {} });
  started.push(proxy);
  return { engine, proxy };
}

const countBody = (bytes: number) =>
  JSON.stringify({
    model: "m",
    messages: [{ role: "user", content: "x".repeat(bytes) }],
  });

function countTokens(proxy: TestProxy, token: string, body: string) {
  return fetch(`${proxy.url}/v1/messages/count_tokens`, {
    method: "POST",
    headers: { "x-api-key": token, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body,
  });
}

describe("count_tokens goes through the session's limits", () => {
  it("max_in_flight 2: of 12 parallel 1 MiB counts, at most 2 reach the engine at once, the rest get 429", async () => {
    const { engine, proxy } = await setup();
    const token = await mintSessionToken(
      { sessionId: "counter", taskId: "sec", limits: { maxInFlight: 2 } },
      KEY,
    );
    const body = countBody(1024 * 1024);
    const answers = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const res = await countTokens(proxy, token, body);
        return { status: res.status, body: await res.json() };
      }),
    );
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(engine.state.mostAtOnce).toBeLessThanOrEqual(2);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(ok.length).toBeLessThanOrEqual(2);
    expect(refused.length).toBe(12 - ok.length);
    // Anthropic's own 429, which Claude Code retries.
    expect(refused[0].body.error.type).toBe("rate_limit_error");
    expect(ok[0].body).toEqual({ input_tokens: 1000 });
  });

  it("a count costs its tokens: under 1,500 tokens a minute the third count is refused", async () => {
    const { engine, proxy } = await setup();
    const token = await mintSessionToken(
      { sessionId: "counter-tpm", taskId: "sec", limits: { tokensPerMinute: 1500 } },
      KEY,
    );
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await countTokens(proxy, token, countBody(10))).status);
    // 1,500 -> 500 -> -500: the third is refused, and so is every one after it.
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(engine.state.tokenize).toBe(2);
  });

  it("a refused count (bad body) still costs its size", async () => {
    const { engine, proxy } = await setup();
    const token = await mintSessionToken(
      { sessionId: "counter-bad", taskId: "sec", limits: { tokensPerMinute: 1000 } },
      KEY,
    );
    // 8 KiB that is not a valid Anthropic request: 2,048 tokens' worth read and parsed.
    const junk = JSON.stringify({ nope: "y".repeat(8192) });
    expect((await countTokens(proxy, token, junk)).status).toBe(400);
    expect((await countTokens(proxy, token, countBody(10))).status).toBe(429);
    expect(engine.state.tokenize).toBe(0);
  });

  it("model listing is admitted like any call of the session", async () => {
    const { engine, proxy } = await setup();
    const token = await mintSessionToken(
      { sessionId: "lister", taskId: "sec", limits: { maxInFlight: 1 } },
      KEY,
    );
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await fetch(`${proxy.url}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    expect(engine.state.mostAtOnce).toBe(1);
  });
});

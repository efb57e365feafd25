import { afterAll, describe, expect, it } from "vitest";
import { mintSessionToken } from "../../shared/session-token.ts";
import { startFakeUpstream } from "../support/fake-upstream.ts";
import { startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * Issue 41, item 6: 2,000 requests to unknown routes carrying a valid session token (all 404) drove
 * the address's bucket negative, so a new session's first call from that address got 429, and still
 * did 5 s later. Now a verified session credential is never charged, and the bucket stops at zero.
 */
const KEY = "address-limit-key";
const started: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of started.reverse()) await s.close();
});

async function setup(perMinute: number) {
  const upstream = await startFakeUpstream();
  const proxy: TestProxy = await startProxy({
    upstream: upstream.url,
    signingKey: KEY,
    log: () => {},
    addressLimit: { perMinute },
  });
  started.push(upstream, proxy);
  return proxy;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function firstCall(proxy: TestProxy, session: string): Promise<number> {
  const token = await mintSessionToken({ sessionId: session, taskId: "sec" }, KEY);
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** `n` requests at once, in waves of 50 (one client's connection pool). */
async function flood(n: number, send: () => Promise<Response>): Promise<number[]> {
  const statuses: number[] = [];
  for (let done = 0; done < n; done += 50) {
    const wave = await Promise.all(
      Array.from({ length: Math.min(50, n - done) }, async () => {
        const res = await send();
        await res.arrayBuffer();
        return res.status;
      }),
    );
    statuses.push(...wave);
  }
  return statuses;
}

describe("the per-address limit", () => {
  it("is not charged for a valid session's requests to unknown routes", async () => {
    const proxy = await setup(20);
    const token = await mintSessionToken({ sessionId: "wanderer", taskId: "sec" }, KEY);
    // Never used on a real route first: the token is verified where it is shown.
    const statuses = await flood(500, () =>
      fetch(`${proxy.url}/v1/no-such-route`, { headers: { authorization: `Bearer ${token}` } }),
    );
    expect(new Set(statuses)).toEqual(new Set([404]));
    // The session next door starts at once.
    expect(await firstCall(proxy, "newcomer")).toBe(200);
  });

  it("stops at zero: a burst of bad keys leaves the address free again within one request's share of a minute", async () => {
    // 600 a minute: one request back every 100 ms.
    const proxy = await setup(600);
    // Well formed but signed with another key: each is verified (an HMAC, off the event loop), so a
    // wave's requests all pass the gate before the first of them is charged.
    const forged = await mintSessionToken({ sessionId: "forger", taskId: "sec" }, "another-key");
    const statuses = await flood(1000, () =>
      fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${forged}`, "content-type": "application/json" },
        body: "{}",
      }),
    );
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    await sleep(250);
    expect(await firstCall(proxy, "after-burst")).toBe(200);
  });
});

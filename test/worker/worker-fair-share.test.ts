import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintSessionToken } from "../../shared/session-token.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { startWorkers, type WorkerHost } from "./worker-host.ts";

// Fair share in the Worker build (workerd via Miniflare): ADDRESS_LIMIT_PER_MINUTE counts requests
// without a valid credential per `cf-connecting-ip`, SESSION_MAX_IN_FLIGHT bounds a session whose
// token carries no limits. Both are counted per isolate (docs/security.md "Fair share at the proxy").
const KEY = "worker-fair-share-key";
let policy: PolicyServer;
let host: WorkerHost;

beforeAll(async () => {
  policy = await startPolicy({ tokensPerSecond: 40 });
  host = await startWorkers([
    {
      name: "fair",
      vars: {
        UPSTREAM_URL: policy.url,
        POLAR_SIGNING_KEY: KEY,
        STORE: "r2",
        ADDRESS_LIMIT_PER_MINUTE: "2",
        SESSION_MAX_IN_FLIGHT: "1",
      },
      r2: true,
    },
  ]);
});
afterAll(async () => {
  await host?.dispose();
  await policy?.close();
});

const chat = (key: string, content: string, stream: boolean) =>
  fetch(`${host.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", stream, messages: [{ role: "user", content }] }),
  });

describe("fair share in the Worker", () => {
  it("refuses an address past ADDRESS_LIMIT_PER_MINUTE uncredentialed requests, per cf-connecting-ip", async () => {
    const from = (ip: string) =>
      host.fetch("fair", "/v1/chat/completions", {
        method: "POST",
        headers: { authorization: "Bearer nope", "cf-connecting-ip": ip },
        body: "{}",
      });
    const firstCharged = Date.now();
    expect((await from("198.51.100.7")).status).toBe(401);
    expect((await from("198.51.100.7")).status).toBe(401);
    const refused = await from("198.51.100.7");
    expect(refused.status).toBe(429);
    // 2 a minute: 30 s, less what the bucket refilled since the first charge (seconds, on a busy machine).
    const waitMs = Number(refused.headers.get("retry-after-ms"));
    expect(waitMs).toBeLessThanOrEqual(30_000);
    expect(waitMs).toBeGreaterThanOrEqual(30_000 - (Date.now() - firstCharged) - 1);
    expect(refused.headers.get("retry-after")).toBe(String(Math.ceil(waitMs / 1000)));
    expect((await from("198.51.100.8")).status).toBe(401);
  });

  it("applies SESSION_MAX_IN_FLIGHT to a token without limits", async () => {
    const key = await mintSessionToken({ sessionId: "w1", taskId: "wf" }, KEY);
    const long = scriptMessage([`say: ${"one two three four five six seven eight ".repeat(4)}`]);
    const stream = await chat(key, long, true);
    expect(stream.status).toBe(200);
    const second = await chat(key, "hi", false);
    expect(second.status).toBe(429);
    expect(await second.json()).toMatchObject({ error: { code: "rate_limit_exceeded" } });
    await stream.text();
    expect((await chat(key, "hi", false)).status).toBe(200);
  });
});

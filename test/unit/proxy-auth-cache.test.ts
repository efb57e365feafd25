import { describe, expect, it } from "vitest";
import { type AuthConfig, authenticate } from "../../proxy-worker/auth.ts";
import { mintSessionToken } from "../../shared/session-token.ts";

const KEY = "cache-test-signing-key-0123456789";

describe("verified session tokens are remembered, never past their expiry", () => {
  it("answers a repeated token from the cache with the same identity", async () => {
    const config: AuthConfig = { mode: "token", signingKey: KEY };
    const token = await mintSessionToken({ sessionId: "s1", taskId: "t1", ttlSeconds: 60, attempt: 2 }, KEY);
    const now = Date.now();
    const first = await authenticate(token, config, now);
    const second = await authenticate(token, config, now + 1000);
    expect(first).toEqual({ ok: true, identity: { sessionId: "s1", taskId: "t1", attempt: 2 } });
    expect(second).toEqual(first);
  });

  it("refuses a remembered token once it has expired", async () => {
    const config: AuthConfig = { mode: "token", signingKey: KEY };
    const token = await mintSessionToken({ sessionId: "s2", taskId: "t1", ttlSeconds: 60 }, KEY);
    const now = Date.now();
    expect((await authenticate(token, config, now)).ok).toBe(true);
    const later = await authenticate(token, config, now + 61_000);
    expect(later).toMatchObject({ ok: false, message: expect.stringMatching(/expired/) });
  });

  it("does not carry a verdict over to a proxy with another signing key", async () => {
    const token = await mintSessionToken({ sessionId: "s3", taskId: "t1", ttlSeconds: 60 }, KEY);
    const now = Date.now();
    expect((await authenticate(token, { mode: "token", signingKey: KEY }, now)).ok).toBe(true);
    const other = await authenticate(token, { mode: "token", signingKey: `${KEY}-rotated` }, now);
    expect(other).toMatchObject({ ok: false, message: expect.stringMatching(/signature/) });
  });

  it("never remembers a failure: a bad token stays bad, a good one after it still works", async () => {
    const config: AuthConfig = { mode: "token", signingKey: KEY };
    const good = await mintSessionToken({ sessionId: "s4", taskId: "t1", ttlSeconds: 60 }, KEY);
    const forged = `${good.split(".")[0]}.${"A".repeat(43)}`;
    const now = Date.now();
    expect((await authenticate(forged, config, now)).ok).toBe(false);
    expect((await authenticate(forged, config, now)).ok).toBe(false);
    expect((await authenticate(good, config, now)).ok).toBe(true);
  });
});

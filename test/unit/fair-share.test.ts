import { describe, expect, it } from "vitest";
import type { SessionIdentity } from "../../proxy-worker/auth.ts";
import { AddressLimiter, addressKey } from "../../proxy-worker/fair-share/address-limiter.ts";
import {
  costOfCall,
  IN_FLIGHT_RETRY_MS,
  SessionLimiter,
  tokensOfBytes,
  tokensOfCall,
} from "../../proxy-worker/fair-share/session-limiter.ts";
import { TaskRequest } from "../../shared/schemas/task.ts";
import { mintSessionToken, SessionTokenError, verifySessionToken } from "../../shared/session-token.ts";

function clock(start = 1_000_000) {
  const c = { now: start, tick: (ms: number) => (c.now += ms), fn: () => c.now };
  return c;
}

const session = (limits?: SessionIdentity["limits"], sessionId = "s1"): SessionIdentity => ({
  sessionId,
  taskId: "t1",
  attempt: 0,
  ...(limits ? { limits } : {}),
});

describe("fair share: calls in flight per session", () => {
  it("admits up to max_in_flight, refuses the next with a 1 s wait, and admits again after a release", () => {
    const limiter = new SessionLimiter({}, clock().fn);
    const s = session({ maxInFlight: 2 });
    const a = limiter.admit(s);
    const b = limiter.admit(s);
    expect(a.ok && b.ok).toBe(true);
    const c = limiter.admit(s);
    expect(c).toMatchObject({ ok: false, limit: "max_in_flight", retryAfterMs: IN_FLIGHT_RETRY_MS });
    if (!c.ok) expect(c.message).toMatch(/session s1 already has 2 model calls in progress/);
    // Another session is not affected by s1 being full.
    expect(limiter.admit(session({ maxInFlight: 2 }, "s2")).ok).toBe(true);
    if (!a.ok) throw new Error("unreachable");
    a.ticket.release();
    a.ticket.release(); // idempotent: one call ending two ways frees one slot
    expect(limiter.admit(s).ok).toBe(true);
    expect(limiter.admit(s).ok).toBe(false);
  });

  it("applies the proxy's defaults to a token without limits, and nothing when there are none", () => {
    const limited = new SessionLimiter({ maxInFlight: 1 }, clock().fn);
    expect(limited.admit(session()).ok).toBe(true);
    expect(limited.admit(session()).ok).toBe(false);
    // The token's own limits win over the proxy's defaults.
    expect(limited.admit(session({ maxInFlight: 3 }, "s9")).ok).toBe(true);
    const open = new SessionLimiter({}, clock().fn);
    for (let i = 0; i < 1000; i++) expect(open.admit(session()).ok).toBe(true);
    expect(open.size).toBe(0);
  });
});

describe("fair share: tokens per minute per session", () => {
  it("charges a call's tokens after it ran, refuses while the bucket is empty, and says how long to wait", () => {
    const c = clock();
    const limiter = new SessionLimiter({}, c.fn);
    const s = session({ tokensPerMinute: 600 }); // 10 tokens a second
    const first = limiter.admit(s);
    if (!first.ok) throw new Error("first call refused");
    first.ticket.release();
    limiter.charge(s, 900); // a large call: 300 tokens of debt
    const refused = limiter.admit(s);
    expect(refused).toMatchObject({ ok: false, limit: "tokens_per_minute" });
    // Debt 300 at 10 tokens/s: back above zero after 30.1 s.
    if (!refused.ok) expect(refused.retryAfterMs).toBe(30_100);
    c.tick(30_000);
    expect(limiter.admit(s).ok).toBe(false);
    c.tick(200);
    expect(limiter.admit(s).ok).toBe(true);
  });

  it("refills to one minute's worth at most, so an idle session cannot save up a burst", () => {
    const c = clock();
    const limiter = new SessionLimiter({}, c.fn);
    const s = session({ tokensPerMinute: 100 });
    limiter.admit(s);
    c.tick(3_600_000);
    limiter.charge(s, 101);
    expect(limiter.admit(s).ok).toBe(false);
  });

  it("counts the engine's usage, else the token ids", () => {
    expect(
      tokensOfCall({
        usage: { prompt_tokens: 30, completion_tokens: 5 },
        prompt_token_ids: [1],
        response_token_ids: [2],
      }),
    ).toBe(35);
    expect(tokensOfCall({ usage: null, prompt_token_ids: [1, 2, 3], response_token_ids: [4] })).toBe(4);
    expect(tokensOfCall({ usage: null, prompt_token_ids: null, response_token_ids: null })).toBe(0);
  });

  it("a failed call costs at least its request's size (4 bytes a token), an answered one its usage", () => {
    const ids = { prompt_token_ids: null, response_token_ids: null };
    const usage = { prompt_tokens: 10, completion_tokens: 2 };
    expect(costOfCall({ ...ids, usage: null, error: { status: 400 } }, 1_048_576)).toBe(262_144);
    expect(costOfCall({ ...ids, usage, error: { status: 500 } }, 8)).toBe(12);
    expect(costOfCall({ ...ids, usage, error: null }, 1_048_576)).toBe(12);
    expect(tokensOfBytes(0)).toBe(0);
    expect(tokensOfBytes(5)).toBe(2);
  });

  it("forgets sessions that hold nothing once many were seen, and keeps those that do", () => {
    const c = clock();
    const limiter = new SessionLimiter({}, c.fn);
    const held = limiter.admit(session({ maxInFlight: 1 }, "busy"));
    expect(held.ok).toBe(true);
    for (let i = 0; i < 3000; i++) {
      const a = limiter.admit(session({ maxInFlight: 4 }, `s${i}`));
      if (a.ok) a.ticket.release();
    }
    expect(limiter.size).toBeLessThan(2100);
    expect(limiter.admit(session({ maxInFlight: 1 }, "busy")).ok).toBe(false);
  });
});

describe("fair share: the limits travel in the session token", () => {
  it("round-trips the lim claim, leaves it out when absent, and refuses a bad value at mint time", async () => {
    const token = await mintSessionToken(
      { sessionId: "s1", taskId: "t1", limits: { maxInFlight: 4, tokensPerMinute: 50_000 } },
      "k",
    );
    expect(await verifySessionToken(token, "k")).toMatchObject({
      ok: true,
      limits: { maxInFlight: 4, tokensPerMinute: 50_000 },
    });
    const plain = await verifySessionToken(
      await mintSessionToken({ sessionId: "s1", taskId: "t1" }, "k"),
      "k",
    );
    expect(plain.ok && "limits" in plain).toBe(false);
    await expect(
      mintSessionToken({ sessionId: "s1", taskId: "t1", limits: { maxInFlight: 0 } }, "k"),
    ).rejects.toThrow(SessionTokenError);
  });

  it("agent.proxy_limits is strict: a misspelt or non-positive limit is an error naming it", () => {
    const base = { task_id: "t", instruction: "x", agent: { harness: "shell" } };
    const ok = TaskRequest.parse({ ...base, agent: { ...base.agent, proxy_limits: { max_in_flight: 2 } } });
    expect(ok.agent.proxy_limits).toEqual({ max_in_flight: 2 });
    const misspelt = TaskRequest.safeParse({
      ...base,
      agent: { ...base.agent, proxy_limits: { max_inflight: 2 } },
    });
    expect(misspelt.success).toBe(false);
    if (!misspelt.success) expect(JSON.stringify(misspelt.error.issues)).toMatch(/max_inflight/);
    const zero = TaskRequest.safeParse({
      ...base,
      agent: { ...base.agent, proxy_limits: { tokens_per_minute: 0 } },
    });
    expect(zero.success).toBe(false);
  });
});

describe("fair share: requests without a credential per address", () => {
  it("allows perMinute at once, then one every 60/perMinute s", () => {
    const c = clock();
    const limiter = new AddressLimiter(3, c.fn);
    for (let i = 0; i < 3; i++) {
      expect(limiter.waitMs("203.0.113.7")).toBe(0);
      limiter.charge("203.0.113.7");
    }
    expect(limiter.waitMs("203.0.113.7")).toBe(20_000);
    expect(limiter.waitMs("203.0.113.8")).toBe(0);
    c.tick(20_000);
    expect(limiter.waitMs("203.0.113.7")).toBe(0);
  });

  it("stops at zero: charges past the budget owe nothing (issue 41, item 6)", () => {
    const c = clock();
    const limiter = new AddressLimiter(3, c.fn);
    for (let i = 0; i < 2000; i++) limiter.charge("203.0.113.9");
    expect(limiter.waitMs("203.0.113.9")).toBe(20_000);
    c.tick(20_000);
    expect(limiter.waitMs("203.0.113.9")).toBe(0);
  });

  it("counts an IPv6 /64 as one client and IPv4-mapped IPv6 as IPv4", () => {
    expect(addressKey("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:0db8:0001:0002:ffff:0:0:9")).toBe("2001:db8:1:2::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("::ffff:192.0.2.1")).toBe("192.0.2.1");
    const limiter = new AddressLimiter(1, clock().fn);
    limiter.charge("2001:db8:1:2::1");
    expect(limiter.waitMs("2001:db8:1:2::abcd")).toBeGreaterThan(0);
    expect(limiter.waitMs("2001:db8:1:3::1")).toBe(0);
  });
});

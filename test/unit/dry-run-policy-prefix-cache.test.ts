import { describe, expect, it } from "vitest";
import { createPolicyApp } from "../../dry-run-policy/app.ts";
import { PrefillClock, PrefixCache } from "../../dry-run-policy/prefix-cache.ts";

const ids = (n: number, offset = 0) => Array.from({ length: n }, (_, i) => i + offset);

describe("PrefixCache", () => {
  it("finds only full leading blocks, never the whole prompt", () => {
    const cache = new PrefixCache(10_000);
    expect(cache.lookup(ids(100))).toBe(0);
    cache.insert(ids(100));
    // 100 tokens = 6 full blocks; the 7th (partial) is never cached.
    expect(cache.lookup(ids(100))).toBe(96);
    expect(cache.lookup(ids(96))).toBe(80); // an exact block multiple still computes its last token
    expect(cache.lookup(ids(200))).toBe(96);
  });

  it("matches by prefix: a changed token stops the match at its block", () => {
    const cache = new PrefixCache(10_000);
    cache.insert(ids(160));
    const changed = ids(160);
    changed[40] = 99_999;
    expect(cache.lookup(changed)).toBe(32);
    // Same tokens at other positions are not a prefix hit.
    expect(cache.lookup([7, ...ids(159)])).toBe(0);
  });

  it("evicts the least recently used blocks beyond its capacity", () => {
    const cache = new PrefixCache(64); // 4 blocks
    cache.insert(ids(64, 0));
    cache.insert(ids(32, 1_000)); // 2 new blocks push out the 2 oldest
    expect(cache.stats().usedTokens).toBe(64);
    expect(cache.lookup([...ids(32, 1_000), 1])).toBe(32);
    expect(cache.lookup([...ids(64, 0), 1])).toBe(0); // its first block is gone, so nothing matches
  });

  it("counts lookups, prompt and cached tokens until cleared", () => {
    const cache = new PrefixCache(1_000);
    cache.insert(ids(48));
    cache.lookup(ids(49));
    expect(cache.stats()).toMatchObject({ lookups: 1, promptTokens: 49, cachedTokens: 48 });
    cache.clear();
    expect(cache.stats()).toMatchObject({ lookups: 0, usedTokens: 0 });
  });
});

describe("PrefillClock", () => {
  it("queues prefill per server", () => {
    const clock = new PrefillClock(1_000);
    expect(clock.schedule(500, 0)).toBe(500);
    expect(clock.schedule(500, 100)).toBe(900);
    expect(new PrefillClock(0).schedule(10_000, 0)).toBe(0);
  });
});

describe("dry-run policy with --prefix-cache-tokens", () => {
  const ask = async (app: ReturnType<typeof createPolicyApp>["app"], messages: object[]) => {
    const res = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages, return_token_ids: true }),
    });
    return (await res.json()) as {
      usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } | null };
    };
  };

  it("reports cached_tokens as vLLM does: none on a cold cache, the shared prefix on the next turn", async () => {
    const { app } = createPolicyApp({ prefixCacheTokens: 100_000 });
    const first = [{ role: "user", content: `Task: ${"lorem ipsum ".repeat(60)}` }];
    const cold = await ask(app, first);
    expect(cold.usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    const next = await ask(app, [
      ...first,
      { role: "assistant", content: "ok" },
      { role: "user", content: "more" },
    ]);
    const cached = next.usage.prompt_tokens_details!.cached_tokens;
    expect(cached % 16).toBe(0);
    expect(cached).toBeGreaterThanOrEqual(Math.floor((cold.usage.prompt_tokens - 16) / 16) * 16 - 16);
    expect(cached).toBeLessThan(next.usage.prompt_tokens);
  });

  it("reports no details without the flag (unchanged default)", async () => {
    const { app } = createPolicyApp();
    const body = await ask(app, [{ role: "user", content: "hi" }]);
    expect(body.usage.prompt_tokens_details).toBeNull();
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { readCaptures } from "../support/proxy.ts";

// The Node proxy in front of several dry-run policy replicas with a prefix cache: affinity keeps a
// session's turns on one replica (cache hits), a replica that dies mid-run loses no capture, and a
// full replica answers in each provider's own retry shape.
const KEY = "routing-test-signing-key";
const token = (taskId: string, sessionId: string) =>
  mintSessionToken({ sessionId, taskId, ttlSeconds: 600 }, KEY);

async function chat(proxy: RunningProxy, tokenValue: string, messages: object[]) {
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${tokenValue}` },
    body: JSON.stringify({ model: "policy", messages }),
  });
  const text = await res.text();
  return { status: res.status, text };
}

function filler(seed: number, words: number): string {
  return Array.from({ length: words }, (_, i) => `w${(seed * 7919 + i * 104729) % 9973}`).join(" ");
}

describe("a replica going down mid-run", () => {
  let replicas: PolicyServer[];
  let proxy: RunningProxy;
  const store = new MemoryStore();

  beforeAll(async () => {
    // A modelled prefill keeps calls in flight while a replica is killed.
    replicas = await Promise.all(
      [0, 1, 2].map(() => startPolicy({ prefixCacheTokens: 200_000, prefillTokensPerSecond: 20_000 })),
    );
    proxy = await startNodeProxy({
      upstreamUrl: replicas[0].url,
      upstreamUrls: replicas.slice(1).map((r) => r.url),
      routing: { policy: "affinity", probeIntervalMs: 100 },
      store,
      port: 0,
      signingKey: KEY,
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all(replicas.map((r) => r.close().catch(() => undefined)));
  });

  it("loses no capture, moves the dead replica's sessions to healthy ones, and keeps the others where they were", async () => {
    const sessions = ["a", "b", "c", "d", "e", "f"].map((s, i) => ({ task: `task-${i % 3}`, id: `s-${s}` }));
    const TURNS = 6;
    const KILL_AFTER = 2 * sessions.length;
    let done = 0;
    let killed: string | null = null;
    const killedAt = new Map<string, number>();
    const statuses: number[] = [];
    const replicaByUrl = new Map(replicas.map((r) => [r.url, r]));

    const run = async (s: (typeof sessions)[number], k: number) => {
      const t = await token(s.task, s.id);
      const messages: object[] = [{ role: "user", content: `Task ${s.task}: ${filler(k % 3, 120)}` }];
      for (let turn = 0; turn < TURNS; turn++) {
        if (killed && !killedAt.has(s.id)) killedAt.set(s.id, turn);
        const r = await chat(proxy, t, messages);
        statuses.push(r.status);
        if (r.status !== 200) return;
        const body = JSON.parse(r.text) as { choices: { message: { content: string } }[] };
        messages.push({ role: "assistant", content: body.choices[0].message.content });
        messages.push({ role: "user", content: `Observation ${turn}: ${filler(k * 31 + turn, 30)}` });
        if (++done === KILL_AFTER && !killed) {
          // The replica that served the most calls so far goes away with calls in flight.
          const counts = new Map<string, number>();
          for (const x of sessions) {
            for (const c of await readCaptures(store, x.task, x.id)) {
              if (c.replica) counts.set(c.replica, (counts.get(c.replica) ?? 0) + 1);
            }
          }
          killed = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
          void replicaByUrl.get(killed)!.close();
        }
      }
    };
    await Promise.all(sessions.map((s, k) => run(s, k)));

    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(killed).not.toBeNull();
    let moved = 0;
    for (const s of sessions) {
      const caps: CaptureRecord[] = await readCaptures(store, s.task, s.id);
      // Every answered call has exactly one capture, and each names the replica that answered.
      expect(caps).toHaveLength(TURNS);
      expect(caps.every((c) => c.error === null && c.replica && replicaByUrl.has(c.replica))).toBe(true);
      const tail = caps.slice(killedAt.get(s.id) ?? TURNS);
      expect(tail.every((c) => c.replica !== killed)).toBe(true);
      // Sticky: a session changes replica at most once (when its own replica died).
      const changes = caps.filter((c, i) => i > 0 && c.replica !== caps[i - 1].replica).length;
      expect(changes).toBeLessThanOrEqual(caps[0].replica === killed ? 1 : 0);
      if (caps[0].replica === killed) moved++;
      // Later turns of a session that stayed put are served from the prefix cache.
      const last = caps.at(-1)!;
      if (last.replica === caps.at(-2)!.replica) expect(last.usage?.cached_tokens ?? 0).toBeGreaterThan(0);
    }
    expect(moved).toBeGreaterThan(0);
    const metrics = await (await fetch(`${proxy.url}/metrics`)).text();
    expect(metrics).toMatch(
      /polar_proxy_cached_prompt_tokens_total\{engine="vllm",provider="openai_chat"\} [1-9]/,
    );
  });
});

const PROMPT = "Answer briefly.";
interface ErrorBody {
  type?: string;
  error: { type?: string; status?: string; code?: number };
}
const CALLS = [
  {
    provider: "anthropic",
    path: "/v1/messages",
    headers: { "anthropic-version": "2023-06-01" },
    body: { model: "policy", max_tokens: 64, messages: [{ role: "user", content: PROMPT }] },
    status: 529,
    shape: (b: ErrorBody) => b.type === "error" && b.error.type === "overloaded_error",
  },
  {
    provider: "openai_chat",
    path: "/v1/chat/completions",
    headers: {},
    body: { model: "policy", messages: [{ role: "user", content: PROMPT }] },
    status: 429,
    shape: (b: ErrorBody) => b.error.type === "rate_limit_error",
  },
  {
    provider: "openai_responses",
    path: "/v1/responses",
    headers: {},
    body: { model: "policy", input: PROMPT },
    status: 429,
    shape: (b: ErrorBody) => b.error.type === "rate_limit_error",
  },
  {
    provider: "google",
    path: "/v1beta/models/policy:generateContent",
    headers: {},
    body: { contents: [{ role: "user", parts: [{ text: PROMPT }] }] },
    status: 429,
    shape: (b: ErrorBody) => b.error.status === "RESOURCE_EXHAUSTED" && b.error.code === 429,
  },
] as const;

describe("back-pressure", () => {
  let policy: PolicyServer;
  let proxy: RunningProxy;
  const store = new MemoryStore();

  beforeAll(async () => {
    // ~1 s of modelled prefill per call keeps the only slot busy while the second call arrives.
    policy = await startPolicy({ prefillTokensPerSecond: 20 });
    proxy = await startNodeProxy({
      upstreamUrl: policy.url,
      routing: { maxInFlight: 1, queueWaitMs: 0 },
      store,
      port: 0,
      signingKey: KEY,
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await policy?.close();
  });

  for (const call of CALLS) {
    it(`answers a call over the in-flight limit ${call.status} with retry-after in the ${call.provider} shape, and captures it`, async () => {
      const send = (session: string) =>
        token("overload", `${call.provider}-${session}`).then((t) =>
          fetch(`${proxy.url}${call.path}`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-api-key": t, ...call.headers },
            body: JSON.stringify(call.body),
          }),
        );
      policy.resetCounts();
      const first = send("first");
      while (policy.counts.chat_completions === 0) await new Promise((r) => setTimeout(r, 5));
      const refused = await send("second");
      const body = await refused.json();
      expect(refused.status).toBe(call.status);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(call.shape(body), JSON.stringify(body)).toBe(true);
      expect((await first).status).toBe(200);
      const [cap] = await readCaptures(store, "overload", `${call.provider}-second`);
      expect(cap).toMatchObject({ provider: call.provider, replica: null, error: { status: call.status } });
      expect(policy.counts.chat_completions).toBe(1);
    });
  }
});

describe("the model list with the first replica down", () => {
  it("comes from a healthy replica once the probes have drained the dead one", async () => {
    const live = await startPolicy();
    const dead = await startPolicy();
    const deadUrl = dead.url;
    await dead.close();
    const proxy = await startNodeProxy({
      upstreamUrl: deadUrl,
      upstreamUrls: [live.url],
      routing: { policy: "affinity", probeIntervalMs: 50 },
      store: new MemoryStore(),
      port: 0,
      signingKey: KEY,
      log: () => {},
    });
    try {
      const t = await token("models", "s-models");
      let status = 0;
      let body = "";
      // The probes notice the dead first replica within a few intervals.
      for (let i = 0; i < 40 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        const res = await fetch(`${proxy.url}/v1/models`, { headers: { authorization: `Bearer ${t}` } });
        status = res.status;
        body = await res.text();
      }
      expect(status, body).toBe(200);
      expect(JSON.parse(body).data.length).toBeGreaterThan(0);
    } finally {
      await proxy.close();
      await live.close();
    }
  });
});

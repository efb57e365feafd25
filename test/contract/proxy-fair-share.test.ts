import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionLimits } from "../../shared/schemas/proxy-limits.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { answerOneToken, type FakeUpstream, startFakeUpstream } from "../support/fake-upstream.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * One greedy session against several normal ones on an engine of fixed capacity, through the real
 * Node proxy. The engine (a fake vLLM on 127.0.0.1) runs SLOTS calls at once, each for CALL_MS, and
 * queues the rest first come first served, as vLLM does past max_num_seqs.
 *
 * The bound. With fair share each session has at most K calls at the engine: the greedy one K, each
 * of the N normal ones 1 (they call one at a time, as a harness does). A normal call therefore
 * finds at most K + N - 1 calls ahead of it and is done within ceil((K + N) / SLOTS) engine rounds:
 * latency <= ceil((K + N) / SLOTS) x L0, L0 being the normal call's latency on the idle engine
 * (one round plus the proxy). Here ceil((2 + 3) / 2) = 3, so 3 x L0; the test allows two rounds
 * more for the CPU the greedy session's refused calls take on a shared 2-core machine while other
 * test files run (measured 2.7-3.4 x): 5 x L0. Without fair share the greedy session's G calls
 * queue ahead: ceil((G + N) / SLOTS) = 10 rounds (measured 9.1-9.7 x), so the same test fails.
 */
const SLOTS = 2;
const CALL_MS = 100;
const K = 2;
const N = 3;
const G = 16;
const KEY = "fair-share-signing-key";
const ROUNDS_BOUND = Math.ceil((K + N) / SLOTS);
const ALLOWED = ROUNDS_BOUND + 2;

/** SLOTS calls at once, CALL_MS each, the rest in arrival order. */
function slotLimitedEngine() {
  let busy = 0;
  const queue: ServerResponse[] = [];
  const next = () => {
    while (busy < SLOTS && queue.length > 0) {
      const res = queue.shift() as ServerResponse;
      busy++;
      setTimeout(() => {
        busy--;
        if (!res.destroyed) answerOneToken(res);
        next();
      }, CALL_MS);
    }
  };
  return (_req: IncomingMessage, res: ServerResponse) => {
    queue.push(res);
    next();
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });

async function call(proxy: TestProxy, token: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
  });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0 };
}

const token = (sessionId: string, limits?: SessionLimits) =>
  mintSessionToken({ sessionId, taskId: "fair", ...(limits ? { limits } : {}) }, KEY);

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/** The normal sessions' latencies while the greedy one hammers: G workers, each re-sending 20 ms after a 429. */
async function contended(proxy: TestProxy, limits: SessionLimits | undefined, tag: string) {
  const greedy = await token(`greedy-${tag}`, limits);
  const normals = await Promise.all(Array.from({ length: N }, (_, i) => token(`normal-${tag}-${i}`, limits)));
  let stop = false;
  const counts = { admitted: 0, refused: 0 };
  const workers = Array.from({ length: G }, async () => {
    while (!stop) {
      const r = await call(proxy, greedy);
      if (r.status === 429) {
        counts.refused++;
        await sleep(20);
      } else counts.admitted++;
    }
  });
  await sleep(4 * CALL_MS); // the greedy session fills the engine first
  const latencies: number[] = [];
  await Promise.all(
    normals.map(async (t) => {
      for (let i = 0; i < 6; i++) {
        const r = await call(proxy, t);
        expect(r.status).toBe(200);
        latencies.push(r.ms);
      }
    }),
  );
  stop = true;
  await Promise.all(workers);
  return { latencies, ...counts };
}

describe("fair share: one greedy session cannot starve the others", () => {
  let engine: FakeUpstream;
  let proxy: TestProxy;
  const store = new MemoryStore();

  beforeAll(async () => {
    engine = await startFakeUpstream(slotLimitedEngine());
    proxy = await startProxy({ upstream: engine.url, signingKey: KEY, store, log: () => {} });
  });
  afterAll(async () => {
    await proxy?.close();
    await engine?.close();
  });

  it(`keeps the normal sessions' p90 latency within ${ALLOWED} x unloaded with max_in_flight ${K}, and not without`, async () => {
    const idle = await token("idle");
    await call(proxy, idle); // first call: model list, connections
    const unloaded: number[] = [];
    for (let i = 0; i < 8; i++) unloaded.push((await call(proxy, idle)).ms);
    const L0 = quantile(unloaded, 0.5);

    const fair = await contended(proxy, { maxInFlight: K }, "on");
    const open = await contended(proxy, undefined, "off");
    const fairP90 = quantile(fair.latencies, 0.9);
    const openP90 = quantile(open.latencies, 0.9);
    console.log(
      `fair share: L0 ${L0.toFixed(0)} ms; normal p90 with max_in_flight ${K}: ${fairP90.toFixed(0)} ms (${(fairP90 / L0).toFixed(1)} x L0, greedy ${fair.admitted} admitted, ${fair.refused} refused); without: ${openP90.toFixed(0)} ms (${(openP90 / L0).toFixed(1)} x L0)`,
    );
    expect(fairP90).toBeLessThanOrEqual(ALLOWED * L0);
    expect(fair.refused).toBeGreaterThan(0);
    // The same load without limits starves the normal sessions: the bound is not met by accident.
    expect(openP90).toBeGreaterThan(ALLOWED * L0);
    expect(open.refused).toBe(0);

    // Every admitted call was captured; no refused one was.
    const greedyCaptures = await readCaptures(store, "fair", "greedy-on");
    expect(greedyCaptures).toHaveLength(fair.admitted);
    expect(greedyCaptures.every((c) => c.error === null)).toBe(true);
  }, 60_000);
});

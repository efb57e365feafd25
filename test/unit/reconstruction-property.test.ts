import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkInvariants } from "../../batch-runner/reconstruction/invariants.ts";
import { perRequestBuilder } from "../../batch-runner/reconstruction/per-request.ts";
import { prefixMergingBuilder } from "../../batch-runner/reconstruction/prefix-merging.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";

const NL = 198;
const token = fc.integer({ min: 0, max: 50 });
const tokens = (max: number) => fc.array(token, { maxLength: max });

const turnPlan = fc.record({
  response: tokens(5),
  /** How this turn ends: sampled <|im_end|>, stop token stripped (template adds it), or neither. */
  eot: fc.constantFrom("sampled", "template", "none"),
  interstitial: tokens(4),
});
const chainPlan = fc.record({ system: tokens(6), turns: fc.array(turnPlan, { minLength: 1, maxLength: 6 }) });
const sessionPlan = fc.record({
  chains: fc.array(chainPlan, { minLength: 1, maxLength: 4 }),
  interleave: fc.array(fc.nat(), { maxLength: 40 }),
  rewrites: fc.uniqueArray(
    fc.record({ chain: fc.nat(), turn: fc.nat(), tail: tokens(3), response: tokens(3) }),
    {
      maxLength: 3,
      selector: (r) => `${r.chain}/${r.turn}`,
    },
  ),
  noise: fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom("failed", "no_ids") }), { maxLength: 3 }),
  missingLogprobsAt: fc.option(fc.nat(), { nil: null }),
});
type SessionPlan = typeof sessionPlan extends fc.Arbitrary<infer T> ? T : never;

interface Call {
  chain: number;
  prompt: number[];
  response: number[];
}

/** Turns a plan into captures in call order, and the chains they truly form. */
function realize(plan: SessionPlan): { captures: CaptureRecord[]; chains: string[][]; rewrites: number } {
  // Each chain's calls, in order; distinct first tokens keep chains from being prefixes of each other.
  const perChain: Call[][] = plan.chains.map((c, j) => {
    let prompt = [1000 + j, ...c.system];
    return c.turns.map((t) => {
      const response = t.eot === "sampled" ? [...t.response, IM_END] : t.response;
      const call = { chain: j, prompt, response };
      const after = t.eot === "sampled" ? [NL] : t.eot === "template" ? [IM_END, NL] : [];
      prompt = [...prompt, ...response, ...after, ...t.interstitial];
      return call;
    });
  });
  // A rewrite restarts from a turn's prompt with different tokens where its response was
  // (e.g. reasoning stripped): a new chain, placed right after that turn.
  const after = new Map<string, Call[]>();
  let rewrites = 0;
  plan.rewrites.forEach((r, i) => {
    const j = r.chain % perChain.length;
    const turn = perChain[j][r.turn % perChain[j].length];
    if (turn.response.length === 0) return; // nothing to rewrite: the same history
    const key = `${j}/${perChain[j].indexOf(turn)}`;
    const chain = perChain.length + rewrites++;
    const prompt = [...turn.prompt, 900 + i, ...r.tail];
    after.set(key, [...(after.get(key) ?? []), { chain, prompt, response: r.response }]);
  });
  const order: Call[] = [];
  const next = perChain.map(() => 0);
  const take = (j: number) => {
    const call = perChain[j][next[j]];
    order.push(call);
    order.push(...(after.get(`${j}/${next[j]}`) ?? []));
    next[j]++;
  };
  for (const pick of plan.interleave) {
    const open = perChain.map((_, j) => j).filter((j) => next[j] < perChain[j].length);
    if (open.length === 0) break;
    take(open[pick % open.length]);
  }
  perChain.forEach((calls, j) => {
    while (next[j] < calls.length) take(j);
  });
  const captures: CaptureRecord[] = [];
  const chains: string[][] = [];
  const firstSeen: number[] = [];
  order.forEach((call, i) => {
    for (const n of plan.noise) {
      if (n.at % order.length === i) {
        captures.push(
          n.kind === "failed"
            ? capture(call.prompt, [7], { error: { status: 502, message: "bad gateway" } })
            : capture(call.prompt, [7], { prompt_token_ids: null }),
        );
      }
    }
    const missing = plan.missingLogprobsAt !== null && plan.missingLogprobsAt % order.length === i;
    const c = capture(call.prompt, call.response, missing ? { logprobs: null } : {});
    captures.push(c);
    if (chains[call.chain] === undefined) {
      chains[call.chain] = [];
      firstSeen.push(call.chain);
    }
    chains[call.chain].push(c.capture_id);
  });
  return { captures, chains: firstSeen.map((j) => chains[j]), rewrites };
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed | 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) | 0;
    const j = (s >>> 8) % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe("prefix_merging on random multi-chain sessions", () => {
  it("recovers exactly the true chains, with all invariants", () => {
    fc.assert(
      fc.property(sessionPlan, fc.integer(), (plan, seed) => {
        const { captures, chains, rewrites } = realize(plan);
        const builder = prefixMergingBuilder({ end_of_turn_ids: [IM_END] });
        const out = builder.build(captures);
        expect(out.traces.map((t) => t.capture_ids)).toEqual(chains);
        expect(out.stats.chains).toBe(chains.length);
        expect(out.stats.prefix_breaks).toBe(rewrites);
        expect(out.stats.excluded_failed + out.stats.excluded_no_token_ids).toBe(
          captures.length - chains.flat().length,
        );
        checkInvariants(out.traces, captures);
        for (const t of out.traces) {
          // <|im_end|> at a turn boundary is never doubled.
          for (let i = 1; i < t.response_ids.length; i++) {
            expect(t.response_ids[i] === IM_END && t.response_ids[i - 1] === IM_END).toBe(false);
          }
        }
        expect(JSON.stringify(builder.build(shuffled(captures, seed)))).toBe(JSON.stringify(out));
      }),
      { numRuns: 300 },
    );
  });

  it("per_request satisfies the same invariants", () => {
    fc.assert(
      fc.property(sessionPlan, (plan) => {
        const { captures, chains } = realize(plan);
        const out = perRequestBuilder.build(captures);
        expect(out.traces).toHaveLength(chains.flat().length);
        checkInvariants(out.traces, captures);
      }),
      { numRuns: 100 },
    );
  });
});

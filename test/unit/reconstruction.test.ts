import { describe, expect, it } from "vitest";
import { buildTrajectory } from "../../batch-runner/reconstruction/build-session.ts";
import { BuilderConfigError } from "../../batch-runner/reconstruction/builder.ts";
import { checkInvariants, InvariantViolation } from "../../batch-runner/reconstruction/invariants.ts";
import { perRequestBuilder } from "../../batch-runner/reconstruction/per-request.ts";
import { prefixMergingBuilder } from "../../batch-runner/reconstruction/prefix-merging.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";

const NL = 198;
const THINK = 151667;
const END_THINK = 151668;
const merge = (captures: CaptureRecord[], config: Record<string, unknown> = {}) =>
  prefixMergingBuilder(config).build(captures);
const lp = (c: CaptureRecord) => c.response_logprobs as number[];

describe("prefix_merging", () => {
  it("merges two turns whose sampled response ends with <|im_end|> (kept once, trainable)", () => {
    const a = capture([1, 2, 3], [10, 11, IM_END]);
    const b = capture([1, 2, 3, 10, 11, IM_END, NL, 20, 21], [12, IM_END]);
    const { traces, stats } = merge([a, b]);
    expect(traces).toHaveLength(1);
    const [t] = traces;
    expect(t.prompt_ids).toEqual([1, 2, 3]);
    expect(t.response_ids).toEqual([10, 11, IM_END, NL, 20, 21, 12, IM_END]);
    expect(t.loss_mask).toEqual([1, 1, 1, 0, 0, 0, 1, 1]);
    expect(t.response_logprobs).toEqual([...lp(a), 0, 0, 0, ...lp(b)]);
    expect(t.capture_ids).toEqual([a.capture_id, b.capture_id]);
    expect(t.metadata.end_of_turn).toEqual({ sampled: 1, template: 0, none: 0 });
    expect(stats).toMatchObject({
      captures: 2,
      chains: 1,
      prefix_breaks: 0,
      trainable_tokens: 5,
      context_tokens: 6,
    });
    checkInvariants(traces, [a, b]);
  });

  it("merges two turns whose stop token the engine stripped: the template's <|im_end|> is context, not dropped, not doubled", () => {
    const a = capture([1, 2, 3], [10, 11]);
    const b = capture([1, 2, 3, 10, 11, IM_END, NL, 20], [12]);
    const { traces } = merge([a, b], { end_of_turn_ids: [IM_END] });
    expect(traces).toHaveLength(1);
    const [t] = traces;
    expect(t.response_ids).toEqual([10, 11, IM_END, NL, 20, 12]);
    expect(t.loss_mask).toEqual([1, 1, 0, 0, 0, 1]);
    expect(t.response_ids.filter((x) => x === IM_END)).toHaveLength(1);
    expect(t.metadata.end_of_turn).toEqual({ sampled: 0, template: 1, none: 0 });
    checkInvariants(traces, [a, b]);
  });

  it("detects the end-of-turn id from naturally stopped responses when not configured", () => {
    const a = capture([1], [5, IM_END]);
    const b = capture([1, 5, IM_END, NL, 7], [6, IM_END]);
    const c = capture([1, 5, IM_END, NL, 7, 6, IM_END, NL, 8], [9], { finish_reason: "length" });
    const d = capture([1, 5, IM_END, NL, 7, 6, IM_END, NL, 8, 9, IM_END, NL], [4, IM_END]);
    const { traces } = merge([a, b, c, d]);
    expect(traces).toHaveLength(1);
    expect(traces[0].metadata.end_of_turn).toEqual({ sampled: 2, template: 1, none: 0 });
  });

  it("splits a chain whose history was rewritten (earlier reasoning stripped by the template)", () => {
    const a = capture([1, 2, 3], [THINK, 50, 51, END_THINK, 10, IM_END]);
    const b = capture([1, 2, 3, 10, IM_END, NL, 20], [THINK, 52, END_THINK, 12, IM_END]);
    const { traces, stats } = merge([a, b]);
    expect(traces).toHaveLength(2);
    expect(traces.map((t) => t.capture_ids)).toEqual([[a.capture_id], [b.capture_id]]);
    expect(traces[1].prompt_ids).toEqual(b.prompt_token_ids);
    expect(traces[1].loss_mask).toEqual([1, 1, 1, 1, 1]);
    expect(stats).toMatchObject({ chains: 2, prefix_breaks: 1 });
    checkInvariants(traces, [a, b]);
  });

  it("keeps two interleaved sub-agent chains apart", () => {
    const sysA = [100, 1, 1];
    const sysB = [200, 2, 2];
    const a1 = capture(sysA, [11, IM_END]);
    const b1 = capture(sysB, [21, IM_END]);
    const a2 = capture([...sysA, 11, IM_END, 5], [12, IM_END]);
    const b2 = capture([...sysB, 21, IM_END, 6], [22, IM_END]);
    const a3 = capture([...sysA, 11, IM_END, 5, 12, IM_END, 7], [13, IM_END]);
    const all = [a1, b1, a2, b2, a3];
    const { traces, stats } = merge(all);
    expect(traces.map((t) => t.capture_ids)).toEqual([
      [a1.capture_id, a2.capture_id, a3.capture_id],
      [b1.capture_id, b2.capture_id],
    ]);
    expect(traces[0].response_ids).toEqual([11, IM_END, 5, 12, IM_END, 7, 13, IM_END]);
    expect(traces[0].loss_mask).toEqual([1, 1, 0, 1, 1, 0, 1, 1]);
    expect(traces[1].response_ids).toEqual([21, IM_END, 6, 22, IM_END]);
    expect(stats).toMatchObject({ chains: 2, prefix_breaks: 0 });
    checkInvariants(traces, all);
  });

  it("joins the longest matching open tip", () => {
    const x = capture([1], [2]); // tip [1, 2]
    const y = capture([1], [2, 4]); // a resample of the same prompt: new chain, tip [1, 2, 4]
    const z = capture([1, 2, 4, 5], [6]); // both tips are prefixes: y's is longer
    const { traces, stats } = merge([x, y, z]);
    expect(traces.map((t) => t.capture_ids)).toEqual([[x.capture_id], [y.capture_id, z.capture_id]]);
    expect(stats.prefix_breaks).toBe(1);
    checkInvariants(traces, [x, y, z]);
  });

  it("gives null logprobs to a trace with a trainable token lacking one, and keeps the rest", () => {
    const a = capture([1, 2], [3, IM_END]);
    const b = capture([1, 2, 3, IM_END, 9], [4, IM_END], { logprobs: null });
    const c = capture([50], [51, 52], { logprobs: [-0.5] }); // wrong length: not trustworthy
    const d = capture([60], [61], { logprobs: [-0.25] });
    const { traces } = merge([a, b, c, d]);
    expect(traces.map((t) => t.response_logprobs)).toEqual([null, null, [-0.25]]);
    expect(traces[0].loss_mask).toEqual([1, 1, 0, 1, 1]);
    checkInvariants(traces, [a, b, c, d]);
  });

  it("excludes and counts failed calls and calls without real token ids", () => {
    const a = capture([1], [2]);
    const failed = capture([1, 2], [3], { error: { status: 500, message: "upstream down" } });
    const noIds = capture([1, 2], [3], { prompt_token_ids: null });
    const noResponseIds = capture([1, 2], [3], { response_token_ids: null, response_logprobs: null });
    const { traces, stats } = merge([a, failed, noIds, noResponseIds]);
    expect(traces).toHaveLength(1);
    expect(stats).toMatchObject({ captures: 4, excluded_failed: 1, excluded_no_token_ids: 2, chains: 1 });
  });

  it("gives byte-equal output for any listing order", () => {
    const a = capture([1, 2], [3, IM_END]);
    const b = capture([7], [8, IM_END]);
    const c = capture([1, 2, 3, IM_END, 4], [5, IM_END]);
    const d = capture([7, 8, IM_END, 9], [10]);
    const forward = JSON.stringify(merge([a, b, c, d]));
    expect(JSON.stringify(merge([d, c, b, a]))).toBe(forward);
    expect(JSON.stringify(merge([c, a, d, b]))).toBe(forward);
  });

  it("records the oldest policy version of a chain and all of them in metadata", () => {
    const a = capture([1], [2, IM_END], { policy_version: "7" });
    const b = capture([1, 2, IM_END, 3], [4], { policy_version: "8" });
    const [t] = merge([a, b]).traces;
    expect(t.policy_version).toBe("7");
    expect(t.metadata.policy_versions).toEqual(["7", "8"]);
  });

  it("rejects an unusable end_of_turn_ids with the field named", () => {
    expect(() => merge([capture([1], [2])], { end_of_turn_ids: ["x"] })).toThrow(BuilderConfigError);
    expect(() => merge([capture([1], [2])], { end_of_turn_ids: [] })).toThrow(
      /builder\.config\.end_of_turn_ids/,
    );
  });
});

describe("per_request", () => {
  it("gives one trace per capture with the whole response trainable", () => {
    const a = capture([1, 2], [3, IM_END]);
    const b = capture([1, 2, 3, IM_END, 4], [5], { logprobs: null });
    const { traces, stats } = perRequestBuilder.build([b, a]);
    expect(traces.map((t) => t.capture_ids[0])).toEqual([a.capture_id, b.capture_id]);
    expect(traces[1]).toMatchObject({ prompt_ids: [1, 2, 3, IM_END, 4], response_ids: [5], loss_mask: [1] });
    expect(traces[1].response_logprobs).toBeNull();
    expect(traces[0].response_logprobs).toEqual(lp(a));
    expect(stats).toMatchObject({ chains: 2, trainable_tokens: 3, context_tokens: 7 });
    checkInvariants(traces, [a, b]);
  });
});

describe("invariants", () => {
  const a = capture([1, 2], [3, IM_END]);
  const b = capture([1, 2, 3, IM_END, 4], [5, IM_END]);
  const good = () => structuredClone(merge([a, b]).traces);

  it("accept what the builders produce", () => {
    expect(() => checkInvariants(good(), [a, b])).not.toThrow();
    expect(
      buildTrajectory([a, b], { strategy: "prefix_merging", config: {} }, "COMPLETED").traces,
    ).toHaveLength(1);
  });

  it.each([
    [
      "mask 1 on an inserted token",
      (t: ReturnType<typeof good>) => (t[0].loss_mask[2] = 1),
      /mask 1 but no capture sampled/,
    ],
    [
      "mask 0 on a sampled token",
      (t: ReturnType<typeof good>) => (t[0].loss_mask[0] = 0),
      /sampled but has mask 0/,
    ],
    [
      "a changed token",
      (t: ReturnType<typeof good>) => (t[0].response_ids[3] = 99),
      /sampled 5 there|token 5 is/,
    ],
    ["a short mask", (t: ReturnType<typeof good>) => t[0].loss_mask.pop(), /loss_mask has 4 entries/],
    [
      "a logprob on context",
      (t: ReturnType<typeof good>) => ((t[0].response_logprobs as number[])[2] = -1),
      /mask-0 token/,
    ],
    [
      "a wrong logprob",
      (t: ReturnType<typeof good>) => ((t[0].response_logprobs as number[])[0] = -9),
      /logprob 0 is -9/,
    ],
    [
      "null logprobs without cause",
      (t: ReturnType<typeof good>) => (t[0].response_logprobs = null),
      /null although/,
    ],
    [
      "a dropped prompt token",
      (t: ReturnType<typeof good>) => t[0].prompt_ids.pop(),
      /prompt \+ response has/,
    ],
    [
      "a capture left out of its chain",
      (t: ReturnType<typeof good>) => t[0].capture_ids.shift(),
      /mask 1 but no capture/,
    ],
  ])("reject %s", (_name, corrupt, message) => {
    const traces = good();
    corrupt(traces);
    expect(() => checkInvariants(traces, [a, b])).toThrow(InvariantViolation);
    expect(() => checkInvariants(traces, [a, b])).toThrow(message);
  });

  it("reject a usable capture that is in no trace", () => {
    const stray = capture([9], [9]);
    expect(() => checkInvariants(good(), [a, b, stray])).toThrow(
      `capture ${stray.capture_id} is in no trace`,
    );
  });
});

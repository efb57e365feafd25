import { describe, expect, it } from "vitest";
import { evaluateSession } from "../../batch-runner/evaluation/evaluate-session.ts";
import type { EvaluationContext, Evaluator } from "../../batch-runner/evaluation/evaluator.ts";
import { mergeRewards } from "../../batch-runner/evaluation/merge-rewards.ts";
import { Trace, type Trajectory } from "../../shared/schemas/trajectory.ts";

function trace(mask: (0 | 1)[]): Trace {
  return Trace.parse({
    prompt_ids: [1, 2],
    response_ids: mask.map((_, i) => 10 + i),
    loss_mask: mask,
    response_logprobs: mask.map((m) => (m ? -0.5 : 0)),
    reward: null,
    finish_reason: "stop",
    capture_ids: ["c1"],
    policy_version: null,
    metadata: {},
  });
}

function trajectory(
  status: Trajectory["status"],
  n = 2,
  stats: Partial<Trajectory["reconstruction_stats"]> = {},
): Trajectory {
  const traces = Array.from({ length: n }, () => trace([1, 1, 0, 1]));
  return {
    status,
    traces,
    builder: "prefix_merging",
    reconstruction_stats: {
      captures: n,
      excluded_no_token_ids: 0,
      excluded_failed: 0,
      chains: n,
      prefix_breaks: 0,
      trainable_tokens: 3 * n,
      context_tokens: n,
      capture_gaps: 0,
      orphans: 0,
      break_reasons: {},
      ...stats,
    },
    error: status === "COMPLETED" ? null : "the harness did something",
  };
}

describe("mergeRewards", () => {
  it("applies the outcome reward to every trace of a COMPLETED session", () => {
    const m = mergeRewards(trajectory("COMPLETED", 3), { outcome_reward: 0.75, metadata: {} });
    expect(m.reward).toBe(0.75);
    expect(m.trajectory.status).toBe("COMPLETED");
    expect(m.trajectory.traces.map((t) => t.reward)).toEqual([0.75, 0.75, 0.75]);
    expect(m.trajectory.traces[0].loss_mask).toEqual([1, 1, 0, 1]);
  });

  it("uses trace_rewards one per trace", () => {
    const m = mergeRewards(trajectory("COMPLETED", 2), {
      outcome_reward: 1,
      trace_rewards: [0.2, 0.9],
      metadata: {},
    });
    expect(m.trajectory.traces.map((t) => t.reward)).toEqual([0.2, 0.9]);
    expect(m.reward).toBe(1);
  });

  it("makes the session ERROR, reward 0 and fully masked when trace_rewards do not match the trace count", () => {
    const m = mergeRewards(trajectory("COMPLETED", 2), {
      outcome_reward: 1,
      trace_rewards: [1],
      metadata: {},
    });
    expect(m.trajectory.status).toBe("ERROR");
    expect(m.error).toMatch(/1 trace_rewards for 2 traces/);
    expect(m.reward).toBe(0);
    for (const t of m.trajectory.traces) {
      expect(t.loss_mask).toEqual([0, 0, 0, 0]);
      expect(t.response_logprobs).toEqual([0, 0, 0, 0]);
      expect(t.reward).toBe(0);
    }
    expect(m.trajectory.reconstruction_stats.trainable_tokens).toBe(0);
  });

  it("puts step_rewards on each trace's sampled turns as token spans, skipping null turns", () => {
    // The trace [1, 1, 0, 1] has two sampled turns: tokens 0-1 and token 3.
    const m = mergeRewards(trajectory("COMPLETED", 2), {
      outcome_reward: 1,
      step_rewards: [
        [0, 1],
        [null, null],
      ],
      metadata: {},
    });
    expect(m.error).toBeNull();
    expect(m.trajectory.traces.map((t) => t.step_rewards)).toEqual([
      [
        { start: 0, end: 2, reward: 0 },
        { start: 3, end: 4, reward: 1 },
      ],
      null,
    ]);
  });

  it("uses the trace's version_spans as its turns when reconstruction recorded them", () => {
    const t = {
      ...trace([1, 1, 1, 0]),
      version_spans: [
        { start: 0, end: 1, version_start: null, version_end: null },
        { start: 1, end: 3, version_start: null, version_end: null },
      ],
    };
    const m = mergeRewards(
      { ...trajectory("COMPLETED", 1), traces: [t] },
      { outcome_reward: 1, step_rewards: [[0.5, -1]], metadata: {} },
    );
    expect(m.trajectory.traces[0].step_rewards).toEqual([
      { start: 0, end: 1, reward: 0.5 },
      { start: 1, end: 3, reward: -1 },
    ]);
  });

  it("makes the session ERROR when step_rewards do not match the traces' turns", () => {
    const m = mergeRewards(trajectory("COMPLETED", 1), {
      outcome_reward: 1,
      step_rewards: [[1]],
      metadata: {},
    });
    expect(m.trajectory.status).toBe("ERROR");
    expect(m.error).toBe("step_rewards[0] has 1 entries for the trace's 2 sampled turns");
    expect(m.trajectory.traces[0].step_rewards).toBeNull();
    const nan = mergeRewards(trajectory("COMPLETED", 1), {
      outcome_reward: 1,
      step_rewards: [[1, Number.NaN]],
      metadata: {},
    });
    expect(nan.error).toBe("step_rewards[0][1] is neither null nor a finite number");
  });

  it("gives a crashed session reward 0 and fully masked traces", () => {
    const m = mergeRewards(trajectory("ERROR"), null);
    expect(m.reward).toBe(0);
    expect(m.trajectory.traces.every((t) => t.loss_mask.every((x) => x === 0))).toBe(true);
    expect(m.trajectory.traces[0].metadata.masked).toBe("session_error");
  });

  it("keeps the mask of a timed-out session whose captures are intact and marks it agent_timeout", () => {
    const m = mergeRewards(trajectory("TIMEOUT"), null);
    expect(m.reward).toBe(0);
    expect(m.trajectory.status).toBe("TIMEOUT");
    expect(m.trajectory.traces[0].loss_mask).toEqual([1, 1, 0, 1]);
    expect(m.trajectory.traces.every((t) => t.metadata.agent_timeout === true && t.reward === 0)).toBe(true);
  });

  it("masks a timed-out session whose last call failed", () => {
    const m = mergeRewards(trajectory("TIMEOUT", 2, { excluded_failed: 1 }), null);
    expect(m.trajectory.traces[0].loss_mask).toEqual([0, 0, 0, 0]);
    expect(m.trajectory.traces[0].metadata.agent_timeout).toBeUndefined();
  });
});

describe("evaluateSession", () => {
  const ctx = { timeoutMs: 5000, config: {} } as unknown as EvaluationContext;

  it("turns a throwing evaluator into an ERROR session with the reason", async () => {
    const boom: Evaluator = {
      name: "boom",
      async evaluate() {
        throw new Error("tests dir missing");
      },
    };
    const r = await evaluateSession(boom, trajectory("COMPLETED"), ctx);
    expect(r.trajectory.status).toBe("ERROR");
    expect(r.error).toBe("evaluator boom failed: tests dir missing");
    expect(r.reward).toBe(0);
  });

  it("does not call the evaluator for a session that did not complete", async () => {
    let called = false;
    const spy: Evaluator = {
      name: "spy",
      async evaluate() {
        called = true;
        return { outcome_reward: 1, metadata: {} };
      },
    };
    const r = await evaluateSession(spy, trajectory("ERROR"), ctx);
    expect(called).toBe(false);
    expect(r.reward).toBe(0);
  });
});

import { describe, expect, it } from "vitest";
import type { StepOutcome } from "../../batch-runner/evaluation/evaluator.ts";
import { aggregateSteps } from "../../batch-runner/evaluation/harbor-steps.ts";
import { HarborConfig } from "../../shared/schemas/task-settings.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";

/*
 * Issue 49: a multi-step task's reward from its steps. Every step was due: one that got no reward
 * (it errored, was never judged, or never ran because an earlier one ended the steps) counts 0 for
 * every key, so no failure the agent causes at any step scores above doing that step honestly.
 * test/unit/harbor-import-steps.test.ts runs the real steps (`mkdir extra.txt`); this is the table.
 */
const trajectory = { status: "COMPLETED", traces: [] } as unknown as Trajectory;

function config(strategy: "mean" | "final", n = 3): HarborConfig {
  return HarborConfig.parse({
    tests: { "test.sh": "echo 1 > /logs/verifier/reward.txt" },
    step_reward_strategy: strategy,
    steps: Array.from({ length: n }, (_, i) => ({ name: `s${i + 1}`, instruction: `step ${i + 1}` })),
  });
}

const judged = (name: string, rewards: Record<string, number>): StepOutcome => ({
  name,
  evaluation: { outcome_reward: rewards.reward ?? Object.values(rewards)[0] ?? 0, metadata: { rewards } },
  error: null,
  captureIds: [],
});
const failed = (name: string): StepOutcome => ({
  name,
  evaluation: null,
  error: `step ${name} was not judged: the tests wrote no reward file`,
  captureIds: [],
});

const reward = (strategy: "mean" | "final", outcomes: StepOutcome[]) =>
  aggregateSteps(config(strategy), outcomes, trajectory).outcome_reward;

describe("a multi-step task's reward when a step got none (issue 49)", () => {
  it("mean: an unjudged step and the steps that never ran count 0, never raising the mean", () => {
    const honest = [judged("s1", { reward: 1 }), judged("s2", { reward: 0.5 }), judged("s3", { reward: 0 })];
    expect(reward("mean", honest)).toBe(0.5);
    // Step two sabotaged (setup.sh broken, a file blocked, test.sh killed): Harbor's mean gave 1.
    expect(reward("mean", [judged("s1", { reward: 1 }), failed("s2")])).toBeCloseTo(1 / 3);
    // Step one below its min_reward: the two steps that never ran are still due.
    expect(reward("mean", [judged("s1", { reward: 0.6 })])).toBeCloseTo(0.2);
    // Every key of reward.json counts 0 on a step without a reward.
    const ev = aggregateSteps(
      config("mean", 2),
      [judged("s1", { reward: 1, style: 1 }), failed("s2")],
      trajectory,
    );
    expect(ev.metadata.rewards).toEqual({ reward: 0.5, style: 0.5 });
    expect(ev.metadata.unrewarded_steps_count_as_zero).toEqual(["s2"]);
  });

  it("final: the task's last step is due; when it got no reward the task's is 0", () => {
    expect(reward("final", [judged("s1", { reward: 1 }), judged("s2", { reward: 1 }), failed("s3")])).toBe(0);
    // Stopped early (Harbor would take the last step that ran, 1): the last step never ran.
    expect(reward("final", [judged("s1", { reward: 1 })])).toBe(0);
    expect(
      reward("final", [
        judged("s1", { reward: 0 }),
        judged("s2", { reward: 0 }),
        judged("s3", { reward: 1 }),
      ]),
    ).toBe(1);
    // The last step's lone key is its reward, whatever keys the earlier steps wrote.
    expect(
      reward("final", [
        judged("s1", { style: 0 }),
        judged("s2", { style: 0 }),
        judged("s3", { accuracy: 0.5 }),
      ]),
    ).toBe(0.5);
  });

  it("no step judged leaves the session ERROR; a negative reward with a step missing leaves it unrewarded", () => {
    expect(() => reward("mean", [failed("s1")])).toThrow(/no step was judged/);
    // 0 is not the lowest reward of a task that writes -1: the session is not rewarded.
    expect(() => reward("mean", [judged("s1", { reward: -1 }), failed("s2")])).toThrow(
      /step s2, s3 got no reward and a judged step's reward is negative/,
    );
    expect(
      reward("mean", [
        judged("s1", { reward: -1 }),
        judged("s2", { reward: 1 }),
        judged("s3", { reward: 0 }),
      ]),
    ).toBe(0);
  });
});

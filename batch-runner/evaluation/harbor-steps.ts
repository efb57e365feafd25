import type { HarborConfig, HarborStep } from "../../shared/schemas/task-settings.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Evaluation, SessionStep, StepOutcome } from "./evaluator.ts";
import { traceTurns } from "./trace-turns.ts";

/**
 * A multi-step Harbor task (`[[steps]]`) as Harbor's `MultiStepTrial` runs it: one session through
 * the steps, each step judged by its tests laid over the task's, the remaining steps skipped when a
 * step falls below its `min_reward` or fails, and the task's reward the mean per key of the steps
 * (missing keys 0) or the last step's (`final`), a step without a reward counting 0 (aggregateSteps).
 */
export function sessionSteps(cfg: HarborConfig): SessionStep[] | null {
  if (!cfg.steps) return null;
  return cfg.steps.map((s) => ({
    name: s.name,
    instruction: s.instruction,
    timeoutMs: s.agent_timeout_seconds ? s.agent_timeout_seconds * 1000 : null,
    files: s.files,
    setup: s.setup,
    healthcheck: s.healthcheck
      ? {
          command: s.healthcheck.command,
          intervalMs: s.healthcheck.interval_sec * 1000,
          timeoutMs: s.healthcheck.timeout_sec * 1000,
          retries: s.healthcheck.retries,
        }
      : null,
    minReward:
      s.min_reward === undefined
        ? null
        : typeof s.min_reward === "number"
          ? { reward: s.min_reward }
          : s.min_reward,
    artifacts: s.artifacts,
  }));
}

/** The config one step is judged with: its tests over the task's, its env over the task's. */
export function stepConfig(cfg: HarborConfig, step: HarborStep): HarborConfig {
  return {
    ...cfg,
    tests: { ...cfg.tests, ...step.tests },
    env: { ...cfg.env, ...step.env },
    timeout_seconds: step.timeout_seconds ?? cfg.timeout_seconds,
    steps: undefined,
  };
}

/** A step evaluation's named rewards (reward.json's keys, or `{reward}`). */
export function stepRewards(ev: Evaluation): Record<string, number> {
  const named = ev.metadata.rewards;
  return named && typeof named === "object"
    ? (named as Record<string, number>)
    : { reward: ev.outcome_reward };
}

/** Why the steps stop after this one (Harbor's `_should_stop_after_step`), or null. */
export function stopAfter(step: SessionStep, outcome: StepOutcome): string | null {
  if (outcome.error !== null && outcome.evaluation === null)
    return `step ${step.name} failed: ${outcome.error}`;
  if (step.minReward === null || outcome.evaluation === null) return null;
  const rewards = stepRewards(outcome.evaluation);
  for (const [key, threshold] of Object.entries(step.minReward)) {
    const actual = rewards[key] ?? Number.NEGATIVE_INFINITY;
    if (actual < threshold) return `step ${step.name}: ${key} ${actual} is below its min_reward ${threshold}`;
  }
  return null;
}

/**
 * The task's evaluation from its steps' outcomes; throws when no step was judged (the session is
 * ERROR, as a one-step task whose tests wrote no reward).
 *
 * Every step of the task was due. One that got no reward (it failed to run or to be judged, or an
 * earlier failure, a step below its `min_reward` or the budget ended the steps first) counts as
 * the lowest reward, 0 for every key: Harbor's mean over the judged steps alone let an agent that
 * made a later step fail (`mkdir` over that step's file) score a full solve. Counted so, no failure
 * the agent can cause, at any step, scores above doing that step honestly. A task whose judged
 * steps wrote a negative reward has no known floor: a step without one then leaves the session
 * unrewarded (ERROR) rather than counting it at 0.
 */
export function aggregateSteps(
  cfg: HarborConfig,
  outcomes: readonly StepOutcome[],
  trajectory: Trajectory,
): Evaluation {
  const judged = outcomes.filter((o) => o.evaluation !== null);
  if (judged.length === 0)
    throw new Error(
      `no step was judged (${outcomes.map((o) => `${o.name}: ${o.error}`).join("; ") || "no step ran"})`,
    );
  const due = (cfg.steps ?? []).map((step, i) => ({ name: step.name, outcome: outcomes[i] ?? null }));
  const unrewarded = due.filter((d) => !d.outcome?.evaluation).map((d) => d.name);
  const all = judged.map((o) => stepRewards(o.evaluation as Evaluation));
  const names = [...new Set(all.flatMap((r) => Object.keys(r)))];
  if (unrewarded.length > 0 && all.some((r) => Object.values(r).some((v) => v < 0)))
    throw new Error(
      `step ${unrewarded.join(", ")} got no reward and a judged step's reward is negative: with no known lowest reward to count it at, the session is not rewarded`,
    );
  const zero = Object.fromEntries(names.map((k) => [k, 0]));
  const perStep = due.map((d) => (d.outcome?.evaluation ? stepRewards(d.outcome.evaluation) : zero));
  let rewards: Record<string, number>;
  if (cfg.step_reward_strategy === "final") {
    rewards = perStep.at(-1) ?? zero;
  } else {
    rewards = Object.fromEntries(
      names.map((k) => [k, perStep.reduce((sum, r) => sum + (r[k] ?? 0), 0) / perStep.length]),
    );
  }
  const keys = Object.keys(rewards);
  const key = Object.hasOwn(rewards, cfg.reward_key) ? cfg.reward_key : keys.length === 1 ? keys[0] : null;
  if (key === null || key === undefined)
    throw new Error(
      `the steps' rewards have no ${JSON.stringify(cfg.reward_key)} (${keys.join(", ") || "none"})`,
    );
  return {
    outcome_reward: rewards[key] as number,
    step_rewards: stepRewardsOnTurns(trajectory, outcomes),
    metadata: {
      rewards,
      step_reward_strategy: cfg.step_reward_strategy,
      steps: due.map(({ name, outcome: o }) =>
        o
          ? {
              name,
              reward: o.evaluation?.outcome_reward ?? null,
              ...(o.evaluation
                ? { rewards: stepRewards(o.evaluation), metadata: o.evaluation.metadata }
                : {}),
              ...(o.error ? { error: o.error } : {}),
            }
          : { name, reward: null, error: "did not run: an earlier step or the budget ended the steps" },
      ),
      ...(unrewarded.length ? { unrewarded_steps_count_as_zero: unrewarded } : {}),
    },
  };
}

/**
 * Each judged step's reward on the last sampled turn it produced, in every trace holding its turns
 * (a turn is its capture: `capture_ids` runs one per turn); every other turn gets none.
 */
export function stepRewardsOnTurns(
  trajectory: Trajectory,
  outcomes: readonly StepOutcome[],
): (number | null)[][] {
  const stepOf = new Map<string, number>();
  outcomes.forEach((o, i) => {
    for (const id of o.captureIds) stepOf.set(id, i);
  });
  return trajectory.traces.map((trace) => {
    const turns = traceTurns(trace);
    const row: (number | null)[] = turns.map(() => null);
    if (trace.capture_ids.length !== turns.length) return row;
    const last = new Map<number, number>();
    trace.capture_ids.forEach((id, t) => {
      const step = stepOf.get(id);
      if (step !== undefined) last.set(step, t);
    });
    for (const [step, t] of last) {
      const ev = outcomes[step]?.evaluation;
      if (ev) row[t] = ev.outcome_reward;
    }
    return row;
  });
}

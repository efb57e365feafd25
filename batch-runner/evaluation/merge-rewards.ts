import type { StepReward, Trace, Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Evaluation } from "./evaluator.ts";
import { traceTurns } from "./trace-turns.ts";

export interface MergedRewards {
  trajectory: Trajectory;
  /** The session's reward (SessionResult.reward). */
  reward: number;
  /** Set when the evaluation itself made the session ERROR. */
  error: string | null;
}

/**
 * Puts the evaluation into the traces. A COMPLETED session takes `trace_rewards` (which must match
 * the trace count, else the session is ERROR) or the outcome reward on every trace, and its
 * `step_rewards` (one per sampled turn of each trace) as token spans. Any other session
 * gets reward 0 and fully masked traces, so no trainer learns from a broken rollout; the exception
 * is a harness timeout whose captures are all intact: every sampled turn is still real policy output,
 * so its mask is kept and the traces are marked `agent_timeout`.
 */
export function mergeRewards(
  trajectory: Trajectory,
  evaluation: Evaluation | null,
  evaluationError: string | null = null,
): MergedRewards {
  if (trajectory.status === "COMPLETED") {
    const problem =
      evaluationError ?? (evaluation ? checkEvaluation(evaluation, trajectory.traces) : "no evaluation");
    if (problem) {
      const errored: Trajectory = { ...trajectory, status: "ERROR", error: trajectory.error ?? problem };
      return { trajectory: masked(errored, "evaluation_error"), reward: 0, error: problem };
    }
    const ev = evaluation as Evaluation;
    const traces = trajectory.traces.map((t, i) => ({
      ...t,
      reward: ev.trace_rewards?.[i] ?? ev.outcome_reward,
      step_rewards: ev.step_rewards ? stepSpans(t, ev.step_rewards[i]) : t.step_rewards,
    }));
    return { trajectory: { ...trajectory, traces }, reward: ev.outcome_reward, error: null };
  }
  if (trajectory.status === "TIMEOUT" && capturesIntact(trajectory)) {
    const traces = trajectory.traces.map((t) => ({
      ...t,
      reward: 0,
      metadata: { ...t.metadata, agent_timeout: true },
    }));
    return { trajectory: { ...trajectory, traces }, reward: 0, error: null };
  }
  return {
    trajectory: masked(trajectory, trajectory.status === "TIMEOUT" ? "timeout_incomplete" : "session_error"),
    reward: 0,
    error: null,
  };
}

/** null when the evaluation is usable, else why not. */
function checkEvaluation(ev: Evaluation, traces: readonly Trace[]): string | null {
  const traceCount = traces.length;
  if (typeof ev.outcome_reward !== "number" || !Number.isFinite(ev.outcome_reward)) {
    return `the evaluator's outcome_reward is not a finite number (${String(ev.outcome_reward)})`;
  }
  if (ev.trace_rewards === undefined) return checkStepRewards(ev, traces);
  if (!Array.isArray(ev.trace_rewards) || ev.trace_rewards.length !== traceCount) {
    const n = Array.isArray(ev.trace_rewards) ? ev.trace_rewards.length : "non-array";
    return `the evaluator gave ${n} trace_rewards for ${traceCount} traces`;
  }
  const bad = ev.trace_rewards.findIndex((r) => typeof r !== "number" || !Number.isFinite(r));
  return bad >= 0 ? `trace_rewards[${bad}] is not a finite number` : checkStepRewards(ev, traces);
}

function checkStepRewards(ev: Evaluation, traces: readonly Trace[]): string | null {
  if (ev.step_rewards === undefined) return null;
  if (!Array.isArray(ev.step_rewards) || ev.step_rewards.length !== traces.length) {
    const n = Array.isArray(ev.step_rewards) ? ev.step_rewards.length : "non-array";
    return `the evaluator gave step_rewards for ${n} traces, the session has ${traces.length}`;
  }
  for (const [i, steps] of ev.step_rewards.entries()) {
    const turns = traceTurns(traces[i]).length;
    if (!Array.isArray(steps) || steps.length !== turns) {
      return `step_rewards[${i}] has ${Array.isArray(steps) ? steps.length : "no"} entries for the trace's ${turns} sampled turns`;
    }
    const bad = steps.findIndex((r) => r !== null && (typeof r !== "number" || !Number.isFinite(r)));
    if (bad >= 0) return `step_rewards[${i}][${bad}] is neither null nor a finite number`;
  }
  return null;
}

/** The turns given a reward, as token spans (null when none was). */
function stepSpans(trace: Trace, steps: readonly (number | null)[]): StepReward[] | null {
  const spans = traceTurns(trace).flatMap((turn, k) => {
    const reward = steps[k];
    return reward === null || reward === undefined ? [] : [{ ...turn, reward }];
  });
  return spans.length > 0 ? spans : null;
}

/** Every capture made it into a trace: none failed upstream and none lacked real token ids. */
export function capturesIntact(trajectory: Trajectory): boolean {
  const s = trajectory.reconstruction_stats;
  return trajectory.traces.length > 0 && s.excluded_failed === 0 && s.excluded_no_token_ids === 0;
}

function masked(trajectory: Trajectory, why: string): Trajectory {
  const traces = trajectory.traces.map(
    (t): Trace => ({
      ...t,
      reward: 0,
      step_rewards: null,
      loss_mask: t.loss_mask.map(() => 0 as const),
      // Logprobs are 0 wherever the mask is 0 (the Trace contract).
      response_logprobs: t.response_logprobs ? t.response_logprobs.map(() => 0) : null,
      metadata: { ...t.metadata, masked: why },
    }),
  );
  const s = trajectory.reconstruction_stats;
  return {
    ...trajectory,
    traces,
    reconstruction_stats: {
      ...s,
      trainable_tokens: 0,
      context_tokens: s.context_tokens + s.trainable_tokens,
    },
  };
}

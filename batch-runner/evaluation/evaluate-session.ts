import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Evaluation, EvaluationContext, Evaluator } from "./evaluator.ts";
import { mergeRewards } from "./merge-rewards.ts";

export interface SessionEvaluation {
  trajectory: Trajectory;
  reward: number;
  /** SessionResult.evaluation: what the evaluator said, or why it did not run. */
  record: Record<string, unknown> | null;
  error: string | null;
}

/**
 * POSTRUN's evaluation step: only a COMPLETED session is evaluated (others score 0, see
 * merge-rewards.ts); a throwing or overrunning evaluator makes the session ERROR, never the runner.
 */
export async function evaluateSession(
  evaluator: Evaluator,
  trajectory: Trajectory,
  ctx: EvaluationContext,
): Promise<SessionEvaluation> {
  if (trajectory.status !== "COMPLETED") {
    const merged = mergeRewards(trajectory, null);
    return {
      trajectory: merged.trajectory,
      reward: 0,
      record: {
        evaluator: evaluator.name,
        outcome_reward: 0,
        metadata: { skipped: `session is ${trajectory.status}` },
      },
      error: null,
    };
  }
  let evaluation: Evaluation | null = null;
  let failure: string | null = null;
  try {
    evaluation = await withTimeout(evaluator.evaluate(trajectory, ctx), ctx.timeoutMs, evaluator.name);
  } catch (err) {
    failure = `evaluator ${evaluator.name} failed: ${err instanceof Error ? err.message : String(err)}`;
  }
  const merged = mergeRewards(trajectory, evaluation, failure);
  const error = merged.error && !failure ? `evaluator ${evaluator.name}: ${merged.error}` : merged.error;
  return {
    trajectory: merged.error ? { ...merged.trajectory, error: trajectory.error ?? error } : merged.trajectory,
    reward: merged.reward,
    record:
      evaluation && !merged.error
        ? {
            evaluator: evaluator.name,
            outcome_reward: evaluation.outcome_reward,
            ...(evaluation.trace_rewards ? { trace_rewards: evaluation.trace_rewards } : {}),
            ...(evaluation.step_rewards ? { step_rewards: evaluation.step_rewards } : {}),
            metadata: evaluation.metadata,
          }
        : { evaluator: evaluator.name, error },
    error,
  };
}

async function withTimeout<T>(p: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`evaluator ${name} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Evaluation, EvaluationContext, Evaluator } from "./evaluator.ts";

/** Reward 1 when the agent exited 0 within its budget and the trajectory is COMPLETED, else 0. */
export const sessionCompleted: Evaluator = {
  name: "session_completed",
  async evaluate(trajectory: Trajectory, ctx: EvaluationContext): Promise<Evaluation> {
    const ok = trajectory.status === "COMPLETED" && ctx.agent.exitCode === 0 && !ctx.agent.timedOut;
    return {
      outcome_reward: ok ? 1 : 0,
      metadata: { exit_code: ctx.agent.exitCode, timed_out: ctx.agent.timedOut, status: trajectory.status },
    };
  },
};

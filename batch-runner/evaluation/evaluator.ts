import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { ModulePolicy } from "./evaluator-dirs.ts";

export interface AgentResult {
  exitCode: number | null;
  timedOut: boolean;
  finalAnswer: string | null;
}

export interface EvaluationContext {
  /** The agent's runtime, still alive (its work dir holds the agent's changes). */
  runtime: Runtime;
  workDir: string;
  agent: AgentResult;
  timeoutMs: number;
  config: Record<string, unknown>;
  /** Creates a fresh runtime from the same image and prepare steps (swe_patch applies patches there). */
  freshRuntime: () => Promise<Runtime>;
  /** Where `files[...].from` host paths may be read (the operator's `--files-dir`); none when absent. */
  hostFiles?: ModulePolicy;
}

export interface Evaluation {
  outcome_reward: number;
  /** One per trace; a length mismatch makes the session ERROR. */
  trace_rewards?: number[];
  /**
   * Process rewards: per trace, one entry per sampled turn (trace-turns.ts), null for a turn given
   * none. They land on `Trace.step_rewards` as `{start, end, reward}` token spans; a shape mismatch
   * makes the session ERROR.
   */
  step_rewards?: (number | null)[][];
  metadata: Record<string, unknown>;
}

export interface Evaluator {
  name: string;
  /** True when evaluate() calls ctx.freshRuntime(): the pipeline then prewarms one while the agent runs. */
  needsFreshRuntime?: boolean;
  evaluate(trajectory: Trajectory, ctx: EvaluationContext): Promise<Evaluation>;
}

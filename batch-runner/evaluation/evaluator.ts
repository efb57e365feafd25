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
  /**
   * The task's `agent.harness`: a judge that trusts the work dir only where the agent cannot write
   * it at will (no shell) refuses the others (examples/computer-use/judge.mjs).
   */
  harness?: string;
  /** A stepped session's steps as they ran (session-steps.ts); absent for a one-instruction task. */
  steps?: StepOutcome[];
}

/**
 * One step of a session that runs its harness once per step (an evaluator's `steps()`): the step's
 * instruction, what lands in the work dir before it, and when the steps stop after it.
 */
export interface SessionStep {
  name: string;
  instruction: string;
  /** This step's agent budget (the session's still bounds them all). */
  timeoutMs: number | null;
  /** Work-dir path -> text, written in the sandbox before the agent starts. */
  files: Record<string, string>;
  /** `bash setup.sh` in the work dir after `files` land. */
  setup: boolean;
  healthcheck: { command: string; intervalMs: number; timeoutMs: number; retries: number } | null;
  /** Reward key -> threshold: below any (or missing), no later step runs. */
  minReward: Record<string, number> | null;
  /** Work-dir paths kept after the step (with the task's `artifacts`). */
  artifacts: string[];
}

/** What a step left: its evaluation (null when it was not judged) or why it failed. */
export interface StepOutcome {
  name: string;
  evaluation: Evaluation | null;
  error: string | null;
  /** Capture ids the step's harness run produced (what its step reward lands on). */
  captureIds: string[];
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
  /** The task's steps, when its config makes it a stepped session (harbor's `steps`); null otherwise. */
  steps?(config: Record<string, unknown>): SessionStep[] | null;
  /** Judges step `index` in the live session (after its agent ran); `evaluate` later gets every outcome. */
  evaluateStep?(index: number, ctx: EvaluationContext): Promise<Evaluation>;
}

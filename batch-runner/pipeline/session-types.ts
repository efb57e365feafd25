import type { SessionLimits as ProxySessionLimits } from "../../shared/schemas/proxy-limits.ts";
import type { SessionJob, TaskRequest } from "../../shared/schemas/task.ts";
import type { SessionResult, Trajectory } from "../../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import type { Evaluator, SessionStep, StepOutcome } from "../evaluation/evaluator.ts";
import type { ModulePolicy } from "../evaluation/evaluator-dirs.ts";
import type { FreshRuntimes } from "../evaluation/fresh-runtime.ts";
import type { HarnessInvocation, HarnessPreset } from "../harness/preset.ts";
import type { Queue, QueueMessage } from "../queue/queue.ts";
import type { SessionLimits } from "../runtime/limits.ts";
import type { ExecResult, Runtime, RuntimeFactory } from "../runtime/runtime.ts";
import type { TaskCeilings } from "../runtime/task-ceilings.ts";
import type { ArtifactBudget } from "./keep-artifacts.ts";

export interface WrittenGroupShard {
  /** The Parquet key; null when the task produced no trace (only the JSONL twin is written then). */
  key: string | null;
  jsonlKey: string;
  rows: number;
  sessions: number;
}

/** Everything the session stages use; the runner and `polar run` wire real parts, tests may swap some. */
export interface SessionDeps {
  store: ObjectStore;
  /** Runtime factories by RuntimeSpec.backend. */
  runtimes: Record<string, RuntimeFactory>;
  /** Per-session limits where the task names none (runner-defaults.ts), applied where enforceable. */
  sessionLimits?: SessionLimits;
  /**
   * What the proxy lets a session take where the task's `agent.proxy_limits` names none (each key
   * separately; a key left out: no limit); default: `RUNNER_DEFAULTS.proxyMaxInFlight` and
   * `proxyTokensPerMinute`. Minted into the session token.
   */
  proxyLimits?: ProxySessionLimits;
  /** The most a task may ask for (`--max-task-limits`); a task over one ends ERROR at INIT. None when absent. */
  taskCeilings?: TaskCeilings;
  /** `--allow-verifier-network`: a judge whose task asks for a network gets one (off by default). */
  allowVerifierNetwork?: boolean;
  /** `--service-env`: names of the runner's environment side services may take (none by default). */
  serviceEnv?: readonly string[];
  /** Proxy base URL as the host sees it. */
  proxyUrl: string;
  /** POLAR_SIGNING_KEY; null when the proxy runs with `--auth off` (the token is then the session id). */
  signingKey: string | null;
  presetFor(name: string): HarnessPreset;
  resolveEvaluator(strategy: string): Promise<Evaluator>;
  /** Where `evaluator.config.files[...].from` may read on the host; none when absent. */
  hostFiles?: ModulePolicy;
  /** Installs a preset's CLI once into a shared cache; returns its bin dir (null for `shell`). */
  installHarness(preset: HarnessPreset): Promise<string | null>;
  reconstruct(opts: {
    store: ObjectStore;
    task: TaskRequest;
    sessionId: string;
    attempt: number;
    status: Trajectory["status"];
  }): Promise<Trajectory>;
  /** Writes the group shard if every session of the task has a result; null otherwise. */
  writeShard(opts: { store: ObjectStore; task: TaskRequest }): Promise<WrittenGroupShard | null>;
  /** Completion notice for a task whose last session is terminal. */
  onTaskComplete?(task: TaskRequest, shard: WrittenGroupShard): Promise<void>;
  /** After this many deliveries a failing job is recorded as ERROR and dead-lettered. */
  maxReceives: number;
  /** Client-side dead-letter queue (for SQS servers without RedrivePolicy, or `--dlq-url`). */
  deadLetter?: Queue;
  /** How often a running session checks `cancel/{task_id}`. */
  cancelPollMs: number;
  /** Extra seconds of token life beyond the session budget (POSTRUN, retries). */
  tokenMarginSeconds: number;
  log(line: string): void;
  /** Called whenever a session result is written (progress display, `polar sft`'s acceptance). */
  onResult?(result: SessionResult): void;
}

export interface PreparedSession {
  msg: QueueMessage;
  job: SessionJob;
  task: TaskRequest;
  attempt: number;
  runtime: Runtime;
  preset: HarnessPreset;
  evaluator: Evaluator;
  /** Fresh runtimes for the evaluator; prewarmed during INIT when it says it needs one. */
  fresh: FreshRuntimes;
  invocation: HarnessInvocation;
  /** A stepped task's steps, each with its harness invocation (session-steps.ts); absent otherwise. */
  steps?: { step: SessionStep; invocation: HarnessInvocation }[];
  budgetMs: number;
  /** What the attempt may keep of artifacts, all steps' and the end's together (keep-artifacts.ts). */
  artifactBudget: ArtifactBudget;
  /** The task's limits over the runner's defaults (what a limit hit is reported against). */
  limits: SessionLimits;
  initMs: number;
  preparedAt: number;
}

export interface RanSession extends PreparedSession {
  exec: ExecResult | null;
  /** The harness's stdout/stderr, head and tail (harness-output.ts); kept as artifacts by POSTRUN. */
  output?: { stdout: string; stderr: string };
  cancelled: boolean;
  runMs: number;
  readyWaitMs: number;
  /** A stepped task's steps as they ran, judged one by one; absent otherwise. */
  stepOutcomes?: StepOutcome[];
  /** Store keys of the artifacts kept after each step. */
  stepArtifacts?: string[];
}

import { z } from "zod";
import { SHA256_HEX } from "../images/image-refs.ts";
import { Id, JsonObject, Logprobs, TokenIds } from "./common.ts";

/** Why prefix merging started a new chain (docs/reconstruction.md, "Chain breaks"). */
export const BREAK_REASONS = [
  "compaction",
  "history_rewrite",
  "template_drift",
  "retry",
  "sub_agent",
  "length_cut",
  "out_of_order",
  "unknown",
] as const;
export const BreakReason = z.enum(BREAK_REASONS);
export type BreakReason = z.infer<typeof BreakReason>;

/** One sampled turn's place in `response_ids` (end exclusive) and the policy versions it ran under. */
export const VersionSpan = z.object({
  start: z.number().int().nonnegative(),
  end: z.number().int().nonnegative(),
  /** The capture's `policy_version` (request start). */
  version_start: z.string().nullable(),
  /** The capture's `policy_version_end` (answer end); null when the engine did not say. */
  version_end: z.string().nullable(),
});
export type VersionSpan = z.infer<typeof VersionSpan>;

/**
 * A process reward for one sampled turn: the turn's place in `response_ids` (end exclusive, the same
 * span as its `version_spans` entry) and the reward the evaluator gave it.
 */
export const StepReward = z.strictObject({
  start: z.number().int().nonnegative(),
  end: z.number().int().nonnegative(),
  reward: z.number(),
});
export type StepReward = z.infer<typeof StepReward>;

/** One trainable sample. */
export const Trace = z.object({
  prompt_ids: TokenIds,
  response_ids: TokenIds,
  /** 1 = sampled by the policy, 0 = context inserted by the harness or template. */
  loss_mask: z.array(z.union([z.literal(0), z.literal(1)])),
  /** Aligned to response_ids; 0 where mask is 0; null if any trainable token lacks one. */
  response_logprobs: Logprobs.nullable(),
  reward: z.number().nullable(),
  finish_reason: z.string().nullable(),
  capture_ids: z.array(z.string()),
  policy_version: z.string().nullable().default(null),
  metadata: JsonObject.default({}),
  /** A sample the harness never used (retried, auxiliary); masked unless `builder.config.orphans` says keep. */
  orphan: z.boolean().default(false),
  orphan_reason: z.string().nullable().default(null),
  /** Why this chain started; null for a session's first chain (and for per_request traces). */
  break_reason: BreakReason.nullable().default(null),
  /** Index in the trajectory's traces of the chain this one broke away from. */
  parent_trace: z.number().int().nonnegative().nullable().default(null),
  /** A sub-agent's spawning tool call in the parent trace (e.g. Claude Code's `Agent` tool_use id). */
  parent_tool_call_id: z.string().nullable().default(null),
  /** First token position (in the parent's prompt + response) where this chain's prompt differs. */
  break_position: z.number().int().nonnegative().nullable().default(null),
  /** A few token ids around `break_position` in this chain's prompt, for viewers to decode. */
  break_context_ids: TokenIds.nullable().default(null),
  version_spans: z.array(VersionSpan).default([]),
  /** Some turn's versions differ (a weight update landed during the trace). */
  crossed_weight_update: z.boolean().default(false),
  /** Captures without token ids that fall inside this trace (see `builder.config.on_missing_ids`). */
  capture_gaps: z.number().int().nonnegative().default(0),
  /** Per-turn process rewards beside `reward` (docs/evaluation-and-sft.md); null when the evaluator gave none. */
  step_rewards: z.array(StepReward).nullable().default(null),
  /**
   * SHA-256 of each image in the trace's token sequence, in the order the engine saw them (the
   * last turn's request holds them all; repeats kept, each has its own placeholder tokens). The
   * bytes are at `blobs/sha256/{hash}` in the store (docs/computer-use.md).
   */
  image_hashes: z.array(z.string().regex(SHA256_HEX)).default([]),
});
export type Trace = z.infer<typeof Trace>;

export const TRAJECTORY_STATUSES = ["COMPLETED", "TIMEOUT", "ERROR"] as const;
export const TrajectoryStatus = z.enum(TRAJECTORY_STATUSES);
export type TrajectoryStatus = z.infer<typeof TrajectoryStatus>;

export const ReconstructionStats = z.object({
  captures: z.number().int().nonnegative(),
  excluded_no_token_ids: z.number().int().nonnegative(),
  excluded_failed: z.number().int().nonnegative(),
  chains: z.number().int().nonnegative(),
  prefix_breaks: z.number().int().nonnegative(),
  trainable_tokens: z.number().int().nonnegative(),
  context_tokens: z.number().int().nonnegative(),
  /** Successful captures without token ids (each one sampled tokens no trace can train on). */
  capture_gaps: z.number().int().nonnegative().default(0),
  /** Traces tagged orphan (including dropped ones). */
  orphans: z.number().int().nonnegative().default(0),
  /** New chains per break reason. */
  break_reasons: z.record(z.string(), z.number().int().nonnegative()).default({}),
});
export type ReconstructionStats = z.infer<typeof ReconstructionStats>;

export const Trajectory = z.object({
  status: TrajectoryStatus,
  traces: z.array(Trace),
  builder: z.string(),
  reconstruction_stats: ReconstructionStats,
  error: z.string().nullable(),
});
export type Trajectory = z.infer<typeof Trajectory>;

/** `results/{task_id}/{session_id}.json`. */
export const SessionResult = z.object({
  v: z.literal(1),
  task_id: Id,
  session_id: Id,
  sample_index: z.number().int().nonnegative(),
  attempt: z.number().int().nonnegative(),
  status: TrajectoryStatus,
  reward: z.number().nullable(),
  timings: z.object({
    queued_at: z.string().nullable(),
    init_ms: z.number().nonnegative().nullable(),
    ready_wait_ms: z.number().nonnegative().nullable(),
    run_ms: z.number().nonnegative().nullable(),
    postrun_ms: z.number().nonnegative().nullable(),
    finished_at: z.string(),
  }),
  agent: z
    .object({
      exit_code: z.number().int().nullable(),
      timed_out: z.boolean(),
      final_answer: z.string().nullable(),
    })
    .nullable(),
  evaluation: JsonObject.nullable(),
  trajectory: Trajectory,
  error: z.string().nullable(),
  /** Store keys of the harness artifacts POSTRUN kept (`artifacts/{task}/{session}/{attempt}/...`). */
  artifacts: z.array(z.string()).optional(),
});
export type SessionResult = z.infer<typeof SessionResult>;

import { z } from "zod";
import { Id, JsonObject, Logprobs, TokenIds } from "./common.ts";

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

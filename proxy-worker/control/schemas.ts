import { z } from "zod";
import { Id } from "../../shared/schemas/common.ts";

/** Response shapes of the control API; they are also what /openapi.json documents. */

export const ErrorBody = z.object({ error: z.object({ message: z.string() }) });

export const TaskIdParam = z.object({ id: Id });

export const SubmittedBody = z.object({
  task_id: z.string(),
  session_ids: z.array(z.string()),
  enqueued: z.number().int(),
  skipped: z.number().int(),
  submitted_at: z.string(),
  status_url: z.string(),
});

export const TASK_STATES = ["queued", "running", "completed", "cancelled"] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const StatusBody = z.object({
  task_id: z.string(),
  /**
   * cancelled once the marker exists (before or after the shard is written); else completed once
   * the group shard is written; else running once a session's harness has started; else queued.
   */
  state: z.enum(TASK_STATES),
  submitted_at: z.string(),
  num_samples: z.number().int(),
  counts: z.object({
    /** Sessions with a result (terminal). */
    finished: z.number().int(),
    /** Sessions without a result yet. */
    pending: z.number().int(),
    /** Sessions whose harness has started (still running or finished). */
    started: z.number().int(),
    COMPLETED: z.number().int(),
    TIMEOUT: z.number().int(),
    ERROR: z.number().int(),
    /** Result files that could not be read as a SessionResult. */
    unreadable: z.number().int(),
  }),
  cancelled: z.boolean(),
  /** `trajectories/{id}.parquet` once written (null for a task without any trace). */
  shard_key: z.string().nullable(),
  /** `trajectories/{id}.jsonl`, written last: its presence is what "completed" means. */
  shard_jsonl_key: z.string().nullable(),
});
export type StatusBody = z.infer<typeof StatusBody>;

export const CancelBody = z.object({
  task_id: z.string(),
  cancelled: z.literal(true),
  cancel_key: z.string(),
  /** False when the marker was already there. */
  newly_cancelled: z.boolean(),
});

const StoredObject = z.object({ key: z.string(), url: z.string().nullable() });

export const TrajectoriesBody = z.object({
  task_id: z.string(),
  complete: z.boolean(),
  shard: StoredObject.nullable(),
  shard_jsonl: StoredObject.nullable(),
  results: z.array(StoredObject.extend({ session_id: z.string() })),
  /** Seconds the URLs stay valid; null when the store cannot presign (R2 binding, directory). */
  url_expires_in: z.number().int().nullable(),
});

/**
 * An engine replica's base URL as a trainer registers it: http(s), no credentials (they would land
 * in captures and logs), no query or fragment (paths are appended to it).
 */
export const ReplicaUrl = z
  .string()
  .max(2048)
  .refine((raw) => {
    const url = parseUrl(raw);
    return (
      url !== null &&
      (url.protocol === "http:" || url.protocol === "https:") &&
      !url.username &&
      !url.password &&
      !url.search &&
      !url.hash
    );
  }, "must be an http(s) URL without credentials, query or fragment, e.g. http://10.0.0.5:8000");

export const ReplicaBody = z.strictObject({ url: ReplicaUrl });

/** At most this many replicas in one replace call (a fleet, not a hostile list). */
export const MAX_REPLICAS = 1024;

export const ReplaceReplicasBody = z.strictObject({ urls: z.array(ReplicaUrl).min(1).max(MAX_REPLICAS) });

export const ReplicaInfo = z.object({
  /** Its id: the base URL without trailing slashes, as captures' `replica` names it. */
  url: z.string(),
  /** The label of its metrics (`replica="<index>"`). */
  index: z.number().int(),
  origin: z.enum(["configured", "registered"]),
  /** False while drained after a failed call or probe (docs/routing.md "Health"). */
  healthy: z.boolean(),
  in_flight: z.number().int(),
});

export const ReplicasBody = z.object({
  replicas: z.array(ReplicaInfo),
  /** Replicas this call added / removed (absent on GET). */
  added: z.array(z.string()).optional(),
  removed: z.array(z.string()).optional(),
});

/** The trainer's step counter: versions it names are compared as integers (a lower one is refused). */
export const SetPolicyVersionBody = z.strictObject({
  version: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
});

export const PolicyVersionAnswer = z.object({
  /** The version the proxy stamps on captures when the engine reports none; null when none is set. */
  version: z.string().nullable(),
  /** `trainer`: set here; `proxy`: `--policy-version`, `POLICY_VERSION` or `/admin/policy-version`. */
  set_by: z.enum(["proxy", "trainer"]),
  /** The version before this call (PUT only). */
  previous: z.string().nullable().optional(),
});

function parseUrl(raw: string): URL | null {
  try {
    return new URL(raw);
  } catch {
    return null;
  }
}

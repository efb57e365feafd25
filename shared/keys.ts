import { assertValidId } from "./ids.ts";
import { SHA256_HEX } from "./images/image-refs.ts";

/** The storage layout of docs/architecture.md. Every id is checked so no key escapes its prefix. */
export const keys = {
  task: (taskId: string) => `tasks/${assertValidId(taskId, "task_id")}.json`,
  capturesOfTask: (taskId: string) => `captures/${assertValidId(taskId, "task_id")}/`,
  capturesOfSession: (taskId: string, sessionId: string) =>
    `captures/${assertValidId(taskId, "task_id")}/${assertValidId(sessionId, "session_id")}/`,
  capture: (taskId: string, sessionId: string, captureId: string) =>
    `${keys.capturesOfSession(taskId, sessionId)}${assertValidId(captureId, "capture_id")}.json.gz`,
  resultsOfTask: (taskId: string) => `results/${assertValidId(taskId, "task_id")}/`,
  result: (taskId: string, sessionId: string) =>
    `${keys.resultsOfTask(taskId)}${assertValidId(sessionId, "session_id")}.json`,
  shard: (taskId: string) => `trajectories/${assertValidId(taskId, "task_id")}.parquet`,
  shardJsonl: (taskId: string) => `trajectories/${assertValidId(taskId, "task_id")}.jsonl`,
  /** Written once the task's completion notice went out: a redelivery or resubmission checks it. */
  notice: (taskId: string) => `notices/${assertValidId(taskId, "task_id")}.json`,
  cancel: (taskId: string) => `cancel/${assertValidId(taskId, "task_id")}`,
  /** Written when a session's harness starts: the control API's `running` reads these. */
  startedOfTask: (taskId: string) => `started/${assertValidId(taskId, "task_id")}/`,
  started: (taskId: string, sessionId: string) =>
    `started/${assertValidId(taskId, "task_id")}/${assertValidId(sessionId, "session_id")}`,
  /** Harness artifacts (e.g. Codex session logs) kept by POSTRUN, per attempt. */
  artifactsOfAttempt: (taskId: string, sessionId: string, attempt: number) =>
    `artifacts/${assertValidId(taskId, "task_id")}/${assertValidId(sessionId, "session_id")}/${Math.trunc(attempt)}/`,
  /**
   * What a trainer set through the control API, read by every proxy on every model call
   * (docs/control-api.md "Where this state lives"): the engine replica set and the policy version.
   */
  runtimeReplicas: () => "control/replicas.json",
  runtimePolicyVersion: () => "control/policy-version.json",
  /** Image objects and bytes one session attempt added to the store (proxy-worker/images/session-budget.ts). */
  imageBudget: (taskId: string, sessionId: string, attempt: number) =>
    `image-budget/${assertValidId(taskId, "task_id")}/${assertValidId(sessionId, "session_id")}/${Math.trunc(attempt)}.json`,
  /** One image's bytes, shared by every capture that sent it (shared/images/image-refs.ts). */
  imageBlob: (sha256: string) => {
    if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256 hex digest: ${JSON.stringify(sha256)}`);
    return `blobs/sha256/${sha256}`;
  },
} as const;

/**
 * Every error class the runner side throws on purpose, in one list (like BullMQ's `classes/errors/`).
 * A class is defined beside the code that throws it and re-exported here, so callers that tell errors
 * apart import from one module. Each means a different thing to its caller:
 */

// A stored document (task file, session result) that is not JSON or not its schema.
export { StoreDocumentError } from "../shared/store/read-document.ts";
export { TaskConflictError } from "../shared/tasks/submit-task.ts";
export { EvaluatorConfigError } from "./evaluation/evaluator-config.ts";
// A task named an evaluator module or a `files.from` host path outside the operator's allowlists.
export { ModulePathRefused } from "./evaluation/evaluator-dirs.ts";
// A callback_url the runner will not call (scheme, internal address); never retried.
export { CallbackRefused } from "./pipeline/callback-target.ts";
// A queue message that can never be processed (deleted, not retried); init failures are retried.
export { InitError, PoisonMessageError, TaskConfigError } from "./pipeline/session-init.ts";
// `builder.config` of a task cannot be used; the task's sessions get an ERROR trajectory.
export { BuilderConfigError } from "./reconstruction/builder.ts";
export { InvariantViolation } from "./reconstruction/invariants.ts";
export { TaskFileError } from "./reconstruction/reconstruct-task.ts";
// A task's runtime spec this runner does not allow (a bwrap image root outside --bwrap-image-dir).
export { RuntimeSpecRefused } from "./runtime/runtime-spec-refused.ts";
export { ShardInputError } from "./shards/write-group-shard.ts";

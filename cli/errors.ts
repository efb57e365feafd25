/**
 * Every error class the command line and the tools it drives (inspect, export, SFT) throw on
 * purpose, in one list; the runner's own are in batch-runner/errors.ts. Each is defined beside its
 * thrower. A command turns these into a one-line message and exit code 2 instead of a stack trace:
 */

// A file given to `polar inspect`/`polar export` that is none of the readable forms, or is damaged.
export { InspectInputError } from "../inspect/load-inspectable.ts";
// An `--accept` expression of `polar sft` that does not parse or names an unknown field.
export { AcceptExpressionError } from "../sft/accept-expression.ts";
// A command line `polar` cannot run (an unknown flag, a missing argument).
export { UsageError } from "./usage-error.ts";

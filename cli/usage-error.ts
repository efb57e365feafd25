/**
 * Bad command-line input: printed without a stack trace, exit code 2. Its own module (re-exported by
 * errors.ts) because flag parsers load it on every CLI start, where errors.ts would load the pipeline.
 */
export class UsageError extends Error {}

/**
 * The task's runtime spec is not allowed on this runner, or asks for a limit its runtime cannot
 * enforce (a retry cannot help): recorded at once. Its own module so limits.ts, which runtime.ts
 * reads its types from, can throw it without an import ring.
 */
export class RuntimeSpecRefused extends Error {}

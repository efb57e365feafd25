/**
 * The header that tells the engine which session a call belongs to. The proxy adds it to every
 * call it makes upstream; engines ignore unknown headers, so the body the engine samples from (and
 * the capture) is exactly the harness's. The dry-run policy reads it to vary its answer per sample
 * (docs/dry-run-policy.md "Alternatives"). A header rather than a body field: `user` and `seed` are
 * the harness's own fields (a harness may send them; `seed` changes a real engine's sampling), and an
 * invented body field would reach the engine's request validation.
 */
export const UPSTREAM_SESSION_HEADER = "x-polar-session-id";

/**
 * The sample index a session id ends with (`sessionIdsFor` in shared/tasks/submit-task.ts always
 * ends an id with `-{sample_index}`), or undefined for an id not made that way.
 */
export function sampleIndexOf(sessionId: string): number | undefined {
  const m = /-(\d+)$/.exec(sessionId);
  return m ? Number(m[1]) : undefined;
}

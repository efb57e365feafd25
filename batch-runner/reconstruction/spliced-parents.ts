import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { Trace } from "../../shared/schemas/trajectory.ts";
import { InvariantViolation } from "./invariants.ts";
import { usableCaptures } from "./usable-captures.ts";

/**
 * Token-in-token-out (docs/tito.md): a `spliced` capture's prompt is its parent's prompt + sampled
 * ids + a delta, so it must extend the parent token for token and sit in the parent's trace.
 * Parents that are not usable (failed, no ids) and captures the builder dropped (orphans) are in
 * no trace, so only the token check applies to them; so does a parent with several spliced children:
 * a retried call (two children, one prompt), or a branch (a harness that drops a reply it could not
 * parse, as mini-swe-agent does after a format error, sends its next call on the turn before it).
 * One trace can carry only one child on; the builder starts the others their own.
 */
export function checkSplicedParents(
  traces: readonly Trace[],
  captures: readonly CaptureRecord[],
  dropped: ReadonlySet<string> = new Set(),
): void {
  const { turns } = usableCaptures(captures);
  const byId = new Map(turns.map((t) => [t.capture.capture_id, t]));
  const traceOf = new Map<string, number>();
  traces.forEach((t, i) => {
    for (const id of t.capture_ids) traceOf.set(id, i);
  });
  const children = new Map<string, number>();
  for (const t of turns) {
    const parent = t.capture.parent_capture_id;
    if (t.capture.tito === "spliced" && parent) children.set(parent, (children.get(parent) ?? 0) + 1);
  }
  for (const turn of turns) {
    const c = turn.capture;
    if (c.tito !== "spliced" || !c.parent_capture_id) continue;
    const parent = byId.get(c.parent_capture_id);
    if (!parent) continue;
    const head = parent.prompt.length + parent.response.length;
    const extends_ =
      turn.prompt.length > head &&
      parent.prompt.every((id, i) => turn.prompt[i] === id) &&
      parent.response.every((id, i) => turn.prompt[parent.prompt.length + i] === id);
    if (!extends_) {
      throw new InvariantViolation(
        `spliced capture ${c.capture_id} does not extend its parent ${parent.capture.capture_id} token for token`,
      );
    }
    if (dropped.has(c.capture_id) || dropped.has(parent.capture.capture_id)) continue;
    if ((children.get(c.parent_capture_id) ?? 0) > 1) continue;
    if (traceOf.get(c.capture_id) !== traceOf.get(parent.capture.capture_id)) {
      throw new InvariantViolation(
        `spliced capture ${c.capture_id} is not in the trace of its parent ${parent.capture.capture_id}`,
      );
    }
  }
}

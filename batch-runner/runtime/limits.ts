import type { z } from "zod";
import type { RuntimeSpec } from "../../shared/schemas/task.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";

/** A session's resource limits: the task's `runtime.limits` over the runner's defaults. */
export type SessionLimits = z.infer<typeof RuntimeSpec>["limits"];
type LimitName = keyof SessionLimits & string;

/** The limits a session can hit; each names the outcome reason `limit:<name>`. */
export const LIMIT_HITS = ["memory", "pids", "disk", "output"] as const;
export type LimitHit = (typeof LIMIT_HITS)[number];

/** The reason a session that hit a limit ends with, first in SessionResult.error. */
export function limitReason(hit: LimitHit, limits: SessionLimits): string {
  const what: Record<LimitHit, string> = {
    memory: `the session ran out of memory (memory_mb ${limits.memory_mb ?? "?"}): the kernel killed a process`,
    pids: `the session reached its process limit (pids ${limits.pids ?? "?"}): a fork failed`,
    disk: `the session filled its disk (disk_mb ${limits.disk_mb ?? "?"}): no space or no inodes left`,
    output: `the harness printed more than output_mb ${limits.output_mb ?? "?"} on stdout and stderr`,
  };
  return `limit:${hit}: ${what[hit]}`;
}

/** Which requested limits a backend can enforce (true), or why not (a string). */
export type LimitSupport = Record<LimitName, true | string>;

/**
 * The limits a session runs with: every limit the task asks for must be enforceable, else the
 * session is refused before it runs (an unbounded run is worse than none); a runner default the
 * backend cannot enforce is dropped (the runner said so at start), not a reason to refuse.
 */
export function effectiveLimits(
  backend: string,
  requested: SessionLimits,
  defaults: SessionLimits | undefined,
  support: LimitSupport,
): SessionLimits {
  const out: SessionLimits = {};
  for (const [name, value] of Object.entries(defaults ?? {}) as [LimitName, number | undefined][]) {
    if (value !== undefined && support[name] === true) out[name] = value;
  }
  for (const [name, value] of Object.entries(requested) as [LimitName, number | undefined][]) {
    if (value === undefined) continue;
    // Asking for no GPU needs no enforcement.
    if (name === "gpus" && value === 0) continue;
    const why = support[name];
    if (why !== true) {
      throw new RuntimeSpecRefused(`runtime.limits.${name} cannot be enforced by ${backend} here: ${why}`);
    }
    out[name] = value;
  }
  return out;
}

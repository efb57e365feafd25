import { z } from "zod";

/**
 * The trace and stats fields the engine-faithfulness work adds (chain breaks, orphans, capture
 * gaps, policy-version spans). Read leniently from the raw JSON, each optional, so the viewer
 * shows them when a store has them and works on stores written before they existed.
 */
const Version = z.union([z.string(), z.number()]).nullable();

export const TraceExtras = z.object({
  orphan: z.boolean().optional(),
  orphan_reason: z.string().nullable().optional(),
  break_reason: z.string().nullable().optional(),
  parent_trace: z.number().int().nonnegative().nullable().optional(),
  parent_tool_call_id: z.string().nullable().optional(),
  break_position: z.number().int().nonnegative().nullable().optional(),
  break_context_ids: z.array(z.number().int().nonnegative()).nullable().optional(),
  version_spans: z
    .array(
      z.object({
        start: z.number().int().nonnegative(),
        end: z.number().int().nonnegative(),
        version_start: Version,
        version_end: Version,
      }),
    )
    .optional(),
  crossed_weight_update: z.boolean().optional(),
  capture_gaps: z.number().int().nonnegative().optional(),
});
export type TraceExtras = z.infer<typeof TraceExtras>;

export const StatsExtras = z.object({
  capture_gaps: z.number().int().nonnegative().optional(),
  orphans: z.number().int().nonnegative().optional(),
  break_reasons: z.record(z.string(), z.number()).optional(),
});
export type StatsExtras = z.infer<typeof StatsExtras>;

/** The extras of one raw trace object; a malformed field drops the extras, never the trace. */
export function traceExtras(raw: unknown): TraceExtras {
  const parsed = TraceExtras.safeParse(raw);
  return parsed.success ? parsed.data : {};
}

export function statsExtras(raw: unknown): StatsExtras {
  const parsed = StatsExtras.safeParse(raw);
  return parsed.success ? parsed.data : {};
}

/** The same fields as shard columns (`version_spans` is JSON text there); absent columns give {}. */
export function extrasOfShardRow(row: object): TraceExtras {
  const r = row as Record<string, unknown>;
  // Parquet readers give int64 as bigint and leave null columns out or null.
  const value = (v: unknown) => (v === null ? undefined : typeof v === "bigint" ? Number(v) : v);
  let spans = value(r.version_spans);
  if (typeof spans === "string") {
    try {
      spans = JSON.parse(spans);
    } catch {
      spans = undefined;
    }
  }
  return traceExtras({
    orphan: value(r.orphan),
    orphan_reason: r.orphan_reason ?? null,
    break_reason: r.break_reason ?? null,
    parent_trace: value(r.parent_trace) ?? null,
    parent_tool_call_id: r.parent_tool_call_id ?? null,
    crossed_weight_update: value(r.crossed_weight_update),
    capture_gaps: value(r.capture_gaps),
    version_spans: spans,
  });
}

/** "break sub_agent from trace 0 (tool call toolu_1)", "break compaction from trace 0, orphan (no_prefix_match), 2 capture gaps, crossed weight update", or "". */
export function describeExtras(e: TraceExtras): string {
  const parts: string[] = [];
  if (e.break_reason != null)
    parts.push(
      `break ${e.break_reason}${e.parent_trace != null ? ` from trace ${e.parent_trace}` : ""}${e.parent_tool_call_id ? ` (tool call ${e.parent_tool_call_id})` : ""}`,
    );
  if (e.orphan) parts.push(`orphan${e.orphan_reason ? ` (${e.orphan_reason})` : ""}`);
  if (e.capture_gaps) parts.push(`${e.capture_gaps} capture gap${e.capture_gaps > 1 ? "s" : ""}`);
  if (e.crossed_weight_update) parts.push("crossed weight update");
  return parts.join(", ");
}

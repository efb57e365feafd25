import { readFile } from "node:fs/promises";
import { readShardJsonl, readShardParquet } from "../batch-runner/shards/read-shard.ts";
import { type ShardRow, shardRows } from "../batch-runner/shards/shard-rows.ts";
import { CaptureCodecError, decodeCapture } from "../shared/capture-codec.ts";
import type { CaptureRecord } from "../shared/schemas/capture.ts";
import { SessionResult } from "../shared/schemas/trajectory.ts";
import { formatIssues } from "../shared/zod-issues.ts";
import {
  extrasOfShardRow,
  type StatsExtras,
  statsExtras,
  type TraceExtras,
  traceExtras,
} from "./trace-extras.ts";

export type InspectableKind = "session result" | "parquet shard" | "jsonl shard" | "capture";

/** A file `polar inspect` understands, as shard rows (a SessionResult becomes the rows it would add to a shard). */
export interface Inspectable {
  kind: InspectableKind;
  rows: ShardRow[];
  /** Chain-break, orphan, gap and version fields of each row, when the file has them. */
  extras: TraceExtras[];
  /** Session-level facts only a SessionResult holds. */
  result: SessionResult | null;
  statsExtras: StatsExtras | null;
  /** A raw capture (`captures/.../{id}.json.gz`): one model call, no rows. */
  capture: CaptureRecord | null;
}

/** A file that is none of the forms, or is damaged: says which and why. */
export class InspectInputError extends Error {}

const EXPECTED =
  "expected a SessionResult .json, a .parquet or .jsonl shard, a captures/.../*.json.gz file or a store directory";

export async function loadInspectable(path: string): Promise<Inspectable> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new InspectInputError(`cannot read ${path}: ${(err as Error).message}`);
  }
  return inspectableFromBytes(path, bytes);
}

export async function inspectableFromBytes(path: string, bytes: Uint8Array): Promise<Inspectable> {
  const none = { extras: [], result: null, statsExtras: null, capture: null };
  try {
    if (path.endsWith(".json.gz")) {
      return { kind: "capture", rows: [], ...none, capture: await decodeCapture(bytes) };
    }
    if (path.endsWith(".parquet")) {
      const rows = await readShardParquet(bytes);
      return { ...none, kind: "parquet shard", rows, extras: rows.map(extrasOfShardRow) };
    }
    const text = new TextDecoder().decode(bytes);
    if (path.endsWith(".jsonl")) {
      const rows = readShardJsonl(text);
      return { ...none, kind: "jsonl shard", rows, extras: rows.map(extrasOfShardRow) };
    }
    const raw = JSON.parse(text);
    const parsed = SessionResult.safeParse(raw);
    if (!parsed.success) {
      throw new Error(`not a SessionResult: ${formatIssues(parsed.error, 1)}`);
    }
    const rawTraces: unknown[] = raw?.trajectory?.traces ?? [];
    return {
      kind: "session result",
      rows: shardRows([parsed.data]),
      extras: parsed.data.trajectory.traces.map((_, i) => traceExtras(rawTraces[i])),
      result: parsed.data,
      statsExtras: statsExtras(raw?.trajectory?.reconstruction_stats),
      capture: null,
    };
  } catch (err) {
    const why = err instanceof CaptureCodecError ? err.message : (err as Error).message;
    throw new InspectInputError(`${path}: ${why} (${EXPECTED})`);
  }
}

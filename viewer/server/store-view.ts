import { createHash } from "node:crypto";
import { type StatsExtras, statsExtras, type TraceExtras, traceExtras } from "../../inspect/trace-extras.ts";
import { decodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import { SessionResult } from "../../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { formatIssues } from "../../shared/zod-issues.ts";

/** A result file that did not parse: listed with its reason instead of hiding the session. */
export interface BadResult {
  key: string;
  error: string;
}

/** A SessionResult with the raw extras of its traces and stats (see trace-extras.ts). */
export interface LoadedResult {
  result: SessionResult;
  traceExtras: TraceExtras[];
  statsExtras: StatsExtras;
}

const decoder = new TextDecoder();

/** Parsed results kept, by key; validating a long trace's token arrays costs more than reading them. */
const CACHED_RESULTS = 16;

/** Read-only views of a store for the viewer: tasks, session results, captures, artifacts. */
export class StoreView {
  /** key -> the parse of the bytes whose digest is `digest` (re-parsed when the object changes). */
  private readonly parsed = new Map<string, { digest: string; loaded: LoadedResult }>();
  readonly store: ObjectStore;
  constructor(store: ObjectStore) {
    this.store = store;
  }

  /** Task ids with results or a task document, sorted. */
  async taskIds(): Promise<string[]> {
    const [docs, results] = await Promise.all([this.store.list("tasks/"), this.store.list("results/")]);
    const ids = new Set<string>();
    for (const k of docs) if (k.endsWith(".json")) ids.add(k.slice("tasks/".length, -".json".length));
    for (const k of results) {
      const task = k.split("/")[1];
      if (task) ids.add(task);
    }
    return [...ids].filter((id) => !id.includes("/")).sort();
  }

  async results(taskId: string): Promise<{ results: LoadedResult[]; bad: BadResult[] }> {
    const list = (await this.store.list(keys.resultsOfTask(taskId))).filter((k) => k.endsWith(".json"));
    const loaded = await Promise.all(list.map((key) => this.readResult(key)));
    const results: LoadedResult[] = [];
    const bad: BadResult[] = [];
    for (const r of loaded) {
      if ("error" in r) bad.push(r);
      else results.push(r);
    }
    results.sort(
      (a, b) =>
        a.result.sample_index - b.result.sample_index ||
        a.result.session_id.localeCompare(b.result.session_id),
    );
    return { results, bad };
  }

  /** null when the session has no result (yet). Throws `ViewError` for a result that does not parse. */
  async result(taskId: string, sessionId: string): Promise<LoadedResult | null> {
    const key = keys.result(taskId, sessionId);
    const r = await this.readResult(key);
    if ("error" in r) {
      if (r.error === "missing") return null;
      throw new ViewError(`${key}: ${r.error}`);
    }
    return r;
  }

  /** Capture keys of a session, in call order (capture ids are ULIDs, which sort by time). */
  async captureKeys(taskId: string, sessionId: string): Promise<string[]> {
    return (await this.store.list(keys.capturesOfSession(taskId, sessionId))).filter((k) =>
      k.endsWith(".json.gz"),
    );
  }

  async capture(key: string) {
    const bytes = await this.store.get(key);
    if (!bytes) return null;
    return decodeCapture(bytes);
  }

  async task(taskId: string): Promise<unknown> {
    const bytes = await this.store.get(keys.task(taskId));
    if (!bytes) return null;
    try {
      return JSON.parse(decoder.decode(bytes));
    } catch {
      return null;
    }
  }

  async object(key: string): Promise<Uint8Array | null> {
    return this.store.get(key);
  }

  private async readResult(key: string): Promise<LoadedResult | BadResult> {
    let bytes: Uint8Array | null;
    try {
      bytes = await this.store.get(key);
    } catch (err) {
      return { key, error: `cannot read: ${(err as Error).message}` };
    }
    if (!bytes) return { key, error: "missing" };
    const digest = createHash("sha256").update(bytes).digest("hex");
    const hit = this.parsed.get(key);
    if (hit?.digest === digest) return hit.loaded;
    let raw: unknown;
    try {
      raw = JSON.parse(decoder.decode(bytes));
    } catch (err) {
      return { key, error: `not JSON: ${(err as Error).message}` };
    }
    const parsed = SessionResult.safeParse(raw);
    if (!parsed.success) return { key, error: `not a SessionResult: ${formatIssues(parsed.error, 3)}` };
    const rawTrajectory = (raw as { trajectory?: { traces?: unknown[]; reconstruction_stats?: unknown } })
      .trajectory;
    const loaded = {
      result: parsed.data,
      traceExtras: parsed.data.trajectory.traces.map((_, i) => traceExtras(rawTrajectory?.traces?.[i])),
      statsExtras: statsExtras(rawTrajectory?.reconstruction_stats),
    };
    this.parsed.delete(key);
    this.parsed.set(key, { digest, loaded });
    if (this.parsed.size > CACHED_RESULTS) this.parsed.delete(this.parsed.keys().next().value as string);
    return loaded;
  }
}

/** A store object exists but cannot be shown; the API answers 422 with this message. */
export class ViewError extends Error {}

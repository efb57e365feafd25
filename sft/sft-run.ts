import { resolve } from "node:path";
import { decodeCapture } from "../shared/capture-codec.ts";
import { restoreImages } from "../shared/images/image-refs.ts";
import { keys } from "../shared/keys.ts";
import { openStore } from "../shared/node/open-store.ts";
import type { CaptureRecord } from "../shared/schemas/capture.ts";
import type { TaskRequest } from "../shared/schemas/task.ts";
import { SessionResult } from "../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { readDocument, unlessUnreadable } from "../shared/store/read-document.ts";
import { compileAccept } from "./accept-expression.ts";
import { type EncodeAnswer, loadAnswerEncoder } from "./provider-answer.ts";
import { SftProgress } from "./sft-progress.ts";
import {
  chatRecord,
  isTrainable,
  type SftChatRecord,
  type SftTokenRecord,
  tokenRecord,
} from "./sft-records.ts";

/** Names an `--accept` expression may use (each read from the session's result). */
export const ACCEPT_NAMES = [
  "reward",
  "status",
  "task_id",
  "session_id",
  "sample_index",
  "traces",
  "trainable_tokens",
  "exit_code",
  "timed_out",
  "final_answer",
  "error",
  "evaluation",
] as const;

export function acceptFacts(r: SessionResult): Record<string, unknown> {
  return {
    reward: r.reward,
    status: r.status,
    task_id: r.task_id,
    session_id: r.session_id,
    sample_index: r.sample_index,
    traces: r.trajectory.traces.length,
    trainable_tokens: r.trajectory.reconstruction_stats.trainable_tokens,
    exit_code: r.agent?.exit_code ?? null,
    timed_out: r.agent?.timed_out ?? null,
    final_answer: r.agent?.final_answer ?? null,
    error: r.error,
    // `evaluation.resolved`, `evaluation.missing_lines`...: the evaluator's metadata.
    evaluation: (r.evaluation?.metadata as Record<string, unknown> | undefined) ?? null,
  };
}

export interface SftStats {
  accept: string;
  attempted: number;
  accepted: number;
  rate: number;
  /** Records written (an accepted session gives one per trainable trace). */
  chat_records: number;
  token_records: number;
  /** Accepted traces whose chat form could not be rebuilt (reason per trace). */
  chat_unavailable: { session_id: string; trace_index: number; reason: string }[];
  by_task: Record<string, { attempted: number; accepted: number }>;
  out: string;
}

export interface SftOptions {
  tasks: TaskRequest[];
  accept: string;
  /** DIR or s3://bucket/prefix: chat.jsonl, tokens.jsonl, stats.json are written there. */
  out: string;
  /** Where the rollouts' store lives (a directory; reruns resume from it). */
  workDir: string;
  /**
   * Runs the tasks' sessions with their store under `workDir` (`polar sft` hands in `polar run`'s
   * embedded stack, so this module needs nothing above the runner), calling `onResult` as each
   * session's result is written; resolves once all are done, with the store's directory.
   */
  runRollouts: (onResult: (result: SessionResult) => void) => Promise<{ storeDir: string }>;
  progressOut?: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Runs the rollouts (as `polar run`), then keeps accepted sessions' traces as SFT records. */
export async function runSft(opts: SftOptions): Promise<SftStats> {
  const accept = compileAccept(opts.accept, ACCEPT_NAMES);
  const outStore = openStore(opts.out);
  const total = opts.tasks.reduce((n, t) => n + t.num_samples, 0);
  const progress = new SftProgress(total, opts.progressOut);
  // Sessions run now are shown as they land (runEmbedded's result hook); ones already done by an
  // earlier run are added when the results are read at the end.
  const shown = new Set<string>();
  const show = (r: SessionResult) => {
    if (shown.has(r.session_id)) return;
    shown.add(r.session_id);
    progress.record(r.session_id, accept(acceptFacts(r)), r.reward, r.status);
  };
  const result = await opts.runRollouts(show);
  if (resolve(result.storeDir) !== resolve(opts.workDir, "store")) {
    throw new Error(`the rollouts went to ${result.storeDir}, not ${resolve(opts.workDir, "store")}`);
  }
  // The store `polar run` uses under the work dir (cli/embedded.ts: <outDir>/store).
  const rolloutStore = openStore(result.storeDir);
  const results = await readResults(rolloutStore, opts.tasks);
  for (const r of results) show(r);
  progress.finish();

  const encodeAnswer = await loadAnswerEncoder();
  const stats: SftStats = {
    accept: opts.accept,
    attempted: 0,
    accepted: 0,
    rate: 0,
    chat_records: 0,
    token_records: 0,
    chat_unavailable: [],
    by_task: {},
    out: outStore.url,
  };
  const chat: SftChatRecord[] = [];
  const tokens: SftTokenRecord[] = [];
  for (const task of opts.tasks) stats.by_task[task.task_id] = { attempted: 0, accepted: 0 };
  for (const r of results) {
    const byTask = stats.by_task[r.task_id];
    stats.attempted++;
    byTask.attempted++;
    if (!accept(acceptFacts(r))) continue;
    stats.accepted++;
    byTask.accepted++;
    const captures = new Map<string, CaptureRecord>();
    for (const [i, trace] of r.trajectory.traces.entries()) {
      if (!isTrainable(trace)) continue;
      tokens.push(tokenRecord(r, trace, i));
      const made = await chatOf(rolloutStore, r, i, captures, encodeAnswer);
      if (typeof made === "string")
        stats.chat_unavailable.push({ session_id: r.session_id, trace_index: i, reason: made });
      else chat.push(made);
    }
  }
  stats.rate = stats.attempted ? stats.accepted / stats.attempted : 0;
  stats.chat_records = chat.length;
  stats.token_records = tokens.length;
  await outStore.put("chat.jsonl", jsonl(chat), { contentType: "application/jsonl" });
  await outStore.put("tokens.jsonl", jsonl(tokens), { contentType: "application/jsonl" });
  await outStore.put("stats.json", `${JSON.stringify(stats, null, 2)}\n`, {
    contentType: "application/json",
  });
  return stats;
}

/** Every session result of the tasks, in task order then sample order (a stable output order). */
async function readResults(store: ObjectStore, tasks: TaskRequest[]): Promise<SessionResult[]> {
  const out: SessionResult[] = [];
  for (const task of tasks) {
    const ofTask: SessionResult[] = [];
    for (const key of await store.list(keys.resultsOfTask(task.task_id))) {
      const r = await readResult(store, key);
      if (r) ofTask.push(r);
    }
    out.push(...ofTask.sort((a, b) => a.sample_index - b.sample_index));
  }
  return out;
}

/** null for a missing or unreadable result (it is then neither counted nor accepted). */
function readResult(store: ObjectStore, key: string): Promise<SessionResult | null> {
  return readDocument(store, key, SessionResult, "SessionResult").catch(unlessUnreadable);
}

/** The chat record of trace `i`, or why it cannot be built. */
async function chatOf(
  store: ObjectStore,
  r: SessionResult,
  i: number,
  cache: Map<string, CaptureRecord>,
  encodeAnswer: EncodeAnswer,
): Promise<SftChatRecord | string> {
  const trace = r.trajectory.traces[i];
  const lastId = trace.capture_ids.at(-1);
  if (!lastId) return "the trace names no capture";
  try {
    let last = cache.get(lastId);
    if (!last) {
      const bytes = await store.get(keys.capture(r.task_id, r.session_id, lastId));
      if (!bytes) return `capture ${lastId} is missing from the store`;
      // The record carries the conversation as the client sent it: its images inline again.
      last = await restoreImages(await decodeCapture(bytes), (h) => store.get(keys.imageBlob(h)));
      cache.set(lastId, last);
    }
    return chatRecord(r, trace, i, last, encodeAnswer);
  } catch (err) {
    return `capture ${lastId}: ${(err as Error).message}`;
  }
}

function jsonl(rows: unknown[]): string {
  return rows.map((r) => `${JSON.stringify(r)}\n`).join("");
}

import type { Queue } from "../queue/queue.ts";

/** Sent once the last session of a task is terminal (at least once: a racing POSTRUN may send it too). */
export interface CompletionNotice {
  type: "task_completed";
  task_id: string;
  sessions: number;
  rows: number;
  shard_key: string;
  /** Where the shard is, e.g. `file:///data/trajectories/t1.parquet` or `s3://bucket/prefix/...`. */
  shard_url: string;
  finished_at: string;
}

export interface NotifyOptions {
  resultsQueue?: Queue;
  callbackUrl?: string;
  /** Injected for tests; defaults to global fetch. */
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/** Delivers a notice to the results queue and the task's callback URL; reports failures, never throws. */
export async function sendCompletionNotice(notice: CompletionNotice, opts: NotifyOptions): Promise<string[]> {
  const errors: string[] = [];
  const body = JSON.stringify(notice);
  if (opts.resultsQueue) {
    await opts.resultsQueue
      .send([body])
      .catch((err) => errors.push(`results queue: ${(err as Error).message}`));
  }
  if (opts.callbackUrl) {
    try {
      const res = await (opts.fetch ?? fetch)(opts.callbackUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      });
      if (!res.ok) errors.push(`callback ${opts.callbackUrl}: HTTP ${res.status}`);
      await res.body?.cancel();
    } catch (err) {
      errors.push(`callback ${opts.callbackUrl}: ${(err as Error).message}`);
    }
  }
  return errors;
}

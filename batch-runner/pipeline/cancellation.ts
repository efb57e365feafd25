import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";

/** A task is cancelled once `cancel/{task_id}` exists (any content). */
export async function isCancelled(store: ObjectStore, taskId: string): Promise<boolean> {
  return (await store.get(keys.cancel(taskId))) !== null;
}

/**
 * Polls the cancel marker while a harness runs and aborts it when the marker appears.
 * Store errors are ignored here: a flaky store must not kill a healthy session.
 */
export function watchCancellation(
  store: ObjectStore,
  taskId: string,
  everyMs: number,
): { signal: AbortSignal; stop(): void } {
  const abort = new AbortController();
  const timer = setInterval(() => {
    isCancelled(store, taskId).then(
      (yes) => {
        if (yes) abort.abort(new Error(`task ${taskId} was cancelled`));
      },
      () => {},
    );
  }, everyMs);
  timer.unref();
  return { signal: abort.signal, stop: () => clearInterval(timer) };
}

import { decodeCapture } from "../../shared/capture-codec.ts";
import { compareIds } from "../../shared/ids.ts";
import { keys } from "../../shared/keys.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";

export interface LoadedCaptures {
  /** Of the requested attempt (or the latest one), sorted by capture_id. */
  captures: CaptureRecord[];
  attempt: number;
  /** Stored objects that could not be decoded: kept out, reported, never fatal. */
  unreadable: { key: string; error: string }[];
}

const PARALLEL_GETS = 16;

/**
 * Lists and decodes the captures of one session. A redelivered job reruns the session as a
 * new attempt while the old attempt's captures stay in the store, so only one attempt is
 * returned: `attempt` if given, else the highest attempt present.
 */
export async function loadCaptures(
  store: ObjectStore,
  taskId: string,
  sessionId: string,
  attempt?: number,
): Promise<LoadedCaptures> {
  const listed = (await store.list(keys.capturesOfSession(taskId, sessionId))).filter((k) =>
    k.endsWith(".json.gz"),
  );
  const decoded: (CaptureRecord | null)[] = new Array(listed.length).fill(null);
  const unreadable: { key: string; error: string }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < listed.length) {
      const i = next++;
      const key = listed[i];
      // A store error propagates (the caller retries); only a damaged object is left out.
      const bytes = await store.get(key);
      if (bytes === null) continue; // deleted between list and get
      try {
        const capture = await decodeCapture(bytes);
        if (capture.session_id !== sessionId || capture.task_id !== taskId) {
          throw new Error(`record names task ${capture.task_id} session ${capture.session_id}`);
        }
        decoded[i] = capture;
      } catch (err) {
        unreadable.push({ key, error: (err as Error).message });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_GETS, listed.length) }, worker));
  const all = decoded.filter((c): c is CaptureRecord => c !== null);
  const chosen = attempt ?? all.reduce((max, c) => Math.max(max, c.attempt), 0);
  unreadable.sort((a, b) => compareIds(a.key, b.key));
  return {
    captures: all.filter((c) => c.attempt === chosen).sort((a, b) => compareIds(a.capture_id, b.capture_id)),
    attempt: chosen,
    unreadable,
  };
}

/** Session ids that have captures under `captures/{task}/`, sorted. */
export async function sessionsWithCaptures(store: ObjectStore, taskId: string): Promise<string[]> {
  const prefix = keys.capturesOfTask(taskId);
  const ids = new Set<string>();
  for (const key of await store.list(prefix)) {
    const rest = key.slice(prefix.length);
    const slash = rest.indexOf("/");
    if (slash > 0) ids.add(rest.slice(0, slash));
  }
  return [...ids].sort(compareIds);
}

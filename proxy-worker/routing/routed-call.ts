/**
 * One upstream call through the replica set. A replica that cannot be reached (connection
 * refused or reset: the engine never answered, so nothing was generated that could need a
 * capture) is drained and the call goes to the next healthy replica; one that times out is
 * drained but not retried (it may still be generating).
 */

import { UPSTREAM_SESSION_HEADER } from "../../shared/upstream-session.ts";
import type { SessionIdentity } from "../auth.ts";
import type { EngineVersionOutcome, EngineVersionRead, EngineVersions } from "../engines/weight-version.ts";
import { postJson, type SendInit, type Upstream, type UpstreamResult } from "../upstream.ts";
import type { Replica, ReplicaSet } from "./replicas.ts";

const NO_VERSIONS: EngineVersionOutcome = { span: null, failure: null };

export type RoutedResult =
  | {
      kind: "answered";
      result: UpstreamResult;
      replica: Replica;
      failedOver: Replica[];
      /** The answering engine's own weight versions before and after the call, or why it did not say. */
      versions: EngineVersionOutcome;
    }
  | { kind: "refused"; retryAfterSeconds: number; message: string };

export async function postRouted(
  set: ReplicaSet,
  identity: SessionIdentity,
  path: string,
  body: unknown,
  versions?: EngineVersions,
): Promise<RoutedResult> {
  const tried = new Set<string>();
  const failedOver: Replica[] = [];
  let last: { result: UpstreamResult; replica: Replica; versions: EngineVersionOutcome } | null = null;
  for (;;) {
    const got = await set.acquire(identity, tried);
    if (!got.ok) {
      // Every replica failed this call: the last engine error is the truthful answer.
      if (last && tried.size >= set.replicas.length) return { kind: "answered", ...last, failedOver };
      return { kind: "refused", retryAfterSeconds: got.retryAfterSeconds, message: got.message };
    }
    const { replica } = got.lease;
    const watch = watched(replica.upstream);
    let result: UpstreamResult;
    let start: EngineVersionRead | null = null;
    try {
      // Read on the replica that will sample, before it starts: names the weights of the first token.
      start = versions ? await versions.read(replica.upstream) : null;
      result = await postJson(watch.upstream, path, body, {
        [UPSTREAM_SESSION_HEADER]: identity.sessionId,
      });
    } catch (err) {
      got.lease.release("ok");
      throw err;
    }
    if (watch.outcome === "unreachable") {
      got.lease.release("failed");
      tried.add(replica.id);
      failedOver.push(replica);
      last = { result, replica, versions: NO_VERSIONS };
      continue;
    }
    got.lease.release(watch.outcome === "timeout" ? "failed" : "ok");
    const span = versions && result.ok ? await versions.end(replica.upstream, start) : NO_VERSIONS;
    return { kind: "answered", result, replica, failedOver, versions: span };
  }
}

/** The upstream with its transport watched: did the call throw before any answer, and why. */
function watched(up: Upstream): {
  upstream: Upstream;
  readonly outcome: "answered" | "unreachable" | "timeout";
} {
  const state = { outcome: "answered" as "answered" | "unreachable" | "timeout" };
  const note = (signal: AbortSignal | null | undefined) => {
    state.outcome = signal?.aborted ? "timeout" : "unreachable";
  };
  const upstream: Upstream = {
    ...up,
    fetch: (async (input: RequestInfo | URL, init?: RequestInit) => {
      try {
        return await up.fetch(input, init);
      } catch (err) {
        note(init?.signal);
        throw err;
      }
    }) as typeof fetch,
    ...(up.send
      ? {
          send: async (url: string, init: SendInit) => {
            try {
              return await up.send!(url, init);
            } catch (err) {
              note(init.signal);
              throw err;
            }
          },
        }
      : {}),
  };
  return {
    upstream,
    get outcome() {
      return state.outcome;
    },
  };
}

import type { OpenAPIHono } from "@hono/zod-openapi";
import { probeOnce } from "../routing/probes.ts";
import { type ReplicaAddressPolicy, refusedAddress } from "../routing/replica-address.ts";
import {
  idsWithout,
  type Replica,
  type ReplicaSet,
  ReplicaSetError,
  replicaId,
} from "../routing/replicas.ts";
import type { RuntimeState } from "./control-deps.ts";
import { errorBody, noRuntimeState } from "./error-body.ts";
import {
  listReplicasRoute,
  registerReplicaRoute,
  removeReplicaRoute,
  replaceReplicasRoute,
} from "./routes.ts";
import { SharedStateError } from "./shared-state.ts";

/**
 * `/v1/replicas`: a trainer that starts its own engines (verl's, NeMo RL's replicas, known only at
 * runtime) tells the running proxy where they are. A replica is vetted with the health probe the
 * router uses before it is added, so a typo or a port not yet open is refused with its URL,
 * not discovered by the harness as a failed call.
 */
export function mountReplicaRoutes(
  app: OpenAPIHono,
  state: RuntimeState | null,
  clock: () => number,
  vetting: ReplicaVetting = {},
): void {
  app.openapi(listReplicasRoute, (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    return c.json({ replicas: listed(state.replicas, clock) }, 200);
  });

  app.openapi(registerReplicaRoute, async (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { url } = c.req.valid("json");
    const set = state.replicas;
    // The stored set, not this proxy's: it keeps replicas only another proxy's operator allowed.
    const held = state.storedReplicas();
    if (held.includes(replicaId(url)))
      return c.json({ replicas: listed(set, clock), added: [], removed: [] }, 200);
    const failed = await vet(set, [url], vetting);
    if (failed) return c.json(errorBody(failed.message), failed.status);
    const failedToStore = await stored(state.saveReplicas([...held, replicaId(url)]));
    if (failedToStore) return c.json(errorBody(failedToStore), 503);
    return c.json({ replicas: listed(set, clock), added: [replicaId(url)], removed: [] }, 201);
  });

  app.openapi(replaceReplicasRoute, async (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { urls } = c.req.valid("json");
    const set = state.replicas;
    const ids = urls.map(replicaId);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) return c.json(errorBody(`urls: replica ${dup} is listed twice`), 400);
    const failed = await vet(
      set,
      urls.filter((u) => !set.get(u)),
      vetting,
    );
    if (failed) return c.json(errorBody(failed.message), failed.status);
    const before = idsOf(set.replicas);
    const failedToStore = await stored(state.saveReplicas(urls));
    if (failedToStore) return c.json(errorBody(failedToStore), 503);
    const added = ids.filter((id) => !before.includes(id));
    const removed = before.filter((id) => !ids.includes(id));
    return c.json({ replicas: listed(set, clock), added, removed }, 200);
  });

  app.openapi(removeReplicaRoute, async (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { url } = c.req.valid("json");
    const set = state.replicas;
    let rest: string[];
    try {
      rest = idsWithout(state.storedReplicas(), url);
    } catch (err) {
      if (!(err instanceof ReplicaSetError)) throw err;
      return c.json(errorBody(err.message), err.reason === "unknown" ? 404 : 409);
    }
    const failedToStore = await stored(state.saveReplicas(rest));
    if (failedToStore) return c.json(errorBody(failedToStore), 503);
    return c.json({ replicas: listed(set, clock), added: [], removed: [replicaId(url)] }, 200);
  });
}

/** What a replica the control API adds is checked against, and where a failed probe's cause goes. */
export interface ReplicaVetting extends ReplicaAddressPolicy {
  /** The proxy's log: why a probe failed is written here, never answered. */
  log?: (line: string) => void;
}

/**
 * Checks every new URL's address, then probes them all at once. A refused address is named with
 * its class (403); an unreachable replica is named, and only that (422): what the probe got back (a
 * status, a refused port, a timeout) would let a control-token holder map the proxy's network, so
 * it goes to the proxy's log.
 */
async function vet(
  set: ReplicaSet,
  urls: string[],
  vetting: ReplicaVetting,
): Promise<{ status: 403 | 422; message: string } | null> {
  const unique = [...new Set(urls.map(replicaId))];
  const refused = await Promise.all(
    unique.map(async (url) => ({ url, why: await refusedAddress(url, vetting) })),
  );
  const barred = refused.flatMap((r) => (r.why ? [`replica ${r.url}: ${r.why}`] : []));
  if (barred.length > 0) return { status: 403, message: `${barred.join("; ")}; nothing was changed` };
  const results = await Promise.all(
    unique.map(async (url) => ({ url, probe: await probeOnce(set.upstreamFor(url)) })),
  );
  const bad = results.flatMap((r) => (r.probe.ok ? [] : [{ url: r.url, why: r.probe.why }]));
  if (bad.length === 0) return null;
  for (const r of bad) vetting.log?.(`control API: replica ${r.url} not added: ${r.why}`);
  const named = bad.map((r) => `replica ${r.url} is not reachable`).join("; ");
  return { status: 422, message: `${named}: start the engine first (or fix the URL); nothing was changed` };
}

function listed(set: ReplicaSet, clock: () => number) {
  const now = clock();
  return set.replicas.map((r) => ({
    url: r.id,
    index: r.index,
    origin: r.origin,
    healthy: r.health.healthy(now),
    in_flight: r.inFlight,
  }));
}

function idsOf(replicas: readonly Replica[]): string[] {
  return replicas.map((r) => r.id);
}

/**
 * Null once the change is in the store (every proxy's next call sees it); else why not, for a 503:
 * nothing changed anywhere.
 */
async function stored(save: Promise<void>): Promise<string | null> {
  try {
    await save;
    return null;
  } catch (err) {
    if (!(err instanceof SharedStateError)) throw err;
    return err.message;
  }
}

import type { OpenAPIHono } from "@hono/zod-openapi";
import { probeOnce } from "../routing/probes.ts";
import { type Replica, type ReplicaSet, ReplicaSetError, replicaId } from "../routing/replicas.ts";
import type { RuntimeState } from "./control-deps.ts";
import { errorBody, noRuntimeState } from "./error-body.ts";
import {
  listReplicasRoute,
  registerReplicaRoute,
  removeReplicaRoute,
  replaceReplicasRoute,
} from "./routes.ts";

/**
 * `/v1/replicas`: a trainer that starts its own engines (verl's, NeMo RL's replicas, known only at
 * runtime) tells the running proxy where they are. A replica is vetted with the health probe the
 * router uses before it is added, so a typo or a port not yet open is refused with its URL,
 * not discovered by the harness as a failed call.
 */
export function mountReplicaRoutes(app: OpenAPIHono, state: RuntimeState | null, clock: () => number): void {
  app.openapi(listReplicasRoute, (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    return c.json({ replicas: listed(state.replicas, clock) }, 200);
  });

  app.openapi(registerReplicaRoute, async (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { url } = c.req.valid("json");
    const set = state.replicas;
    if (set.get(url)) return c.json({ replicas: listed(set, clock), added: [], removed: [] }, 200);
    const failed = await unreachable(set, [url]);
    if (failed) return c.json(errorBody(failed), 422);
    const { replica, added } = set.add(url);
    return c.json(
      { replicas: listed(set, clock), added: added ? [replica.id] : [], removed: [] },
      added ? 201 : 200,
    );
  });

  app.openapi(replaceReplicasRoute, async (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { urls } = c.req.valid("json");
    const set = state.replicas;
    const ids = urls.map(replicaId);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) return c.json(errorBody(`urls: replica ${dup} is listed twice`), 400);
    const failed = await unreachable(
      set,
      urls.filter((u) => !set.get(u)),
    );
    if (failed) return c.json(errorBody(failed), 422);
    const { added, removed } = set.replace(urls);
    return c.json({ replicas: listed(set, clock), added: idsOf(added), removed: idsOf(removed) }, 200);
  });

  app.openapi(removeReplicaRoute, (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { url } = c.req.valid("json");
    const set = state.replicas;
    try {
      const gone = set.remove(url);
      return c.json({ replicas: listed(set, clock), added: [], removed: [gone.id] }, 200);
    } catch (err) {
      if (!(err instanceof ReplicaSetError)) throw err;
      return c.json(errorBody(err.message), err.reason === "unknown" ? 404 : 409);
    }
  });
}

/** Probes every new URL at once; the message names each one that did not answer, and why. */
async function unreachable(set: ReplicaSet, urls: string[]): Promise<string | null> {
  const unique = [...new Set(urls.map(replicaId))];
  const results = await Promise.all(
    unique.map(async (url) => ({ url, probe: await probeOnce(set.upstreamFor(url)) })),
  );
  const bad = results.flatMap((r) =>
    r.probe.ok ? [] : [`replica ${r.url} is not reachable (${r.probe.why})`],
  );
  if (bad.length === 0) return null;
  return `${bad.join("; ")}: start the engine first (or fix the URL); nothing was changed`;
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

function idsOf(replicas: Replica[]): string[] {
  return replicas.map((r) => r.id);
}

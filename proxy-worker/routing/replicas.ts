/**
 * The engine replicas behind one proxy: health, in-flight counts, the session -> replica memory,
 * and back-pressure. All of it is this proxy's own; which replicas are in the set is what the
 * trainer stored, when it stored one (control/shared-state.ts applies it with `replace`). A call takes a slot on one replica (`acquire`), waits up to `queueWaitMs`
 * for one when its replica is full, and is refused with a retry-after otherwise, before anything
 * reaches an engine: a refused call has generated nothing, so no capture can be lost.
 */
import type { SessionIdentity } from "../auth.ts";
import type { Upstream } from "../upstream.ts";
import { groupKey, StickyMap, sessionKey } from "./affinity.ts";
import { DEFAULT_DRAIN_MS, ReplicaHealth } from "./health.ts";
import { chooseReplica, DEFAULT_LOAD_FACTOR, type ReplicaLoad, type RoutingPolicy } from "./policies.ts";

export interface RoutingOptions {
  /** Default `affinity`. */
  policy?: RoutingPolicy;
  /**
   * In-flight calls per replica before new ones queue. Default: no limit (the engine queues what
   * it cannot run; a limit here turns overload into a retry-after the harness sees).
   */
  maxInFlight?: number;
  /** How long a call waits for a slot before it is answered 429/529 with retry-after. Default 2 s. */
  queueWaitMs?: number;
  /** First drain after a failure; doubles per failure in a row, up to a minute. Default 5 s. */
  drainMs?: number;
  loadFactor?: number;
}

export const DEFAULT_MAX_IN_FLIGHT = Number.POSITIVE_INFINITY;
export const DEFAULT_QUEUE_WAIT_MS = 2_000;

export interface Replica {
  /** The upstream's base URL as configured: names the replica in captures. */
  id: string;
  /**
   * Position in the configured list, then one more for each replica registered at runtime (never
   * reused): names the replica in metrics (URLs stay out of /metrics).
   */
  index: number;
  /** `configured` at start (flags, env); `registered` through the control API (docs/control-api.md). */
  origin: ReplicaOrigin;
  upstream: Upstream;
  inFlight: number;
  health: ReplicaHealth;
}

export type ReplicaOrigin = "configured" | "registered";

/** A replica's id: its base URL without trailing slashes (how captures and the control API name it). */
export function replicaId(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "");
}

/**
 * `ids` without `id`: `unknown` if it is not there, `last` if it is the only one. The control API
 * removes from the stored set, which may hold replicas this proxy does not route to.
 */
export function idsWithout(ids: readonly string[], id: string): string[] {
  const gone = replicaId(id);
  if (!ids.includes(gone)) throw new ReplicaSetError(`no replica ${gone} in the set`, "unknown");
  if (ids.length === 1)
    throw new ReplicaSetError(
      `${gone} is the only replica: register another first, or replace the set in one call`,
      "last",
    );
  return ids.filter((x) => x !== gone);
}

export type Acquired = { ok: true; lease: Lease } | { ok: false; retryAfterSeconds: number; message: string };

export interface Lease {
  replica: Replica;
  /** `failed`: the replica could not be reached or timed out, so it is drained. */
  release(outcome: "ok" | "failed"): void;
}

export class ReplicaSet {
  /**
   * Changed in place (register, remove, replace), never reassigned: probes and routed calls read it
   * afresh on each use, so a change applies from the next call on.
   */
  readonly replicas: Replica[];
  readonly policy: RoutingPolicy;
  private readonly drainMs: number;
  private nextIndex: number;
  private readonly maxInFlight: number;
  private readonly queueWaitMs: number;
  private readonly loadFactor: number;
  private readonly sticky = new StickyMap();
  private readonly waiters = new Set<() => void>();
  private turn = 0;
  private readonly clock: () => number;

  constructor(upstreams: readonly Upstream[], opts: RoutingOptions = {}, clock: () => number = Date.now) {
    this.clock = clock;
    if (upstreams.length === 0) throw new Error("at least one upstream is required");
    const ids = upstreams.map((u) => replicaId(u.baseUrl));
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) throw new Error(`upstream ${dup} is listed twice`);
    this.policy = opts.policy ?? "affinity";
    this.maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    if (!(this.maxInFlight >= 1)) throw new Error(`maxInFlight must be >= 1, got ${this.maxInFlight}`);
    this.queueWaitMs = opts.queueWaitMs ?? DEFAULT_QUEUE_WAIT_MS;
    this.loadFactor = opts.loadFactor ?? DEFAULT_LOAD_FACTOR;
    this.drainMs = opts.drainMs ?? DEFAULT_DRAIN_MS;
    this.replicas = upstreams.map((upstream, index) => this.fresh(upstream, index, "configured"));
    this.nextIndex = upstreams.length;
  }

  get(id: string): Replica | undefined {
    return this.replicas.find((r) => r.id === replicaId(id));
  }

  /** How a replica at `baseUrl` would be reached: the existing replicas' transport, timeout and log. */
  upstreamFor(baseUrl: string): Upstream {
    return { ...this.replicas[0].upstream, baseUrl: replicaId(baseUrl) };
  }

  /**
   * Adds an engine replica at `baseUrl` (the trainer's own, known only at runtime), reached the way
   * the existing replicas are (same pooled transport, timeout and log). An id already in the set is
   * returned as it is (`added: false`): registering twice is harmless.
   */
  add(baseUrl: string): { replica: Replica; added: boolean } {
    const held = this.get(baseUrl);
    if (held) return { replica: held, added: false };
    const replica = this.fresh(this.upstreamFor(baseUrl), this.nextIndex++, "registered");
    this.replicas.push(replica);
    this.wake();
    return { replica, added: true };
  }

  /**
   * Takes a replica out of rotation: no new call goes to it; calls already on it finish there. The
   * last replica cannot go (the proxy would have no engine): `replace` swaps a whole set instead.
   */
  remove(id: string): Replica {
    this.without(id);
    const at = this.replicas.findIndex((r) => r.id === replicaId(id));
    const [gone] = this.replicas.splice(at, 1);
    // Sessions held there are placed again on their next call (they are not in the healthy set).
    this.wake();
    return gone;
  }

  /**
   * The ids the set would keep without `id`, changing nothing (the control API stores them for
   * every proxy first): `unknown` if it is not in the set, `last` if it is the only one.
   */
  without(id: string): string[] {
    return idsWithout(
      this.replicas.map((r) => r.id),
      id,
    );
  }

  /**
   * The set becomes exactly `baseUrls`: replicas already in it keep their health, in-flight count
   * and sessions; the others are added; the rest leave as `remove` would.
   */
  replace(baseUrls: readonly string[]): { added: Replica[]; removed: Replica[] } {
    const ids = baseUrls.map(replicaId);
    if (ids.length === 0) throw new ReplicaSetError("a replica set needs at least one replica", "last");
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) throw new ReplicaSetError(`replica ${dup} is listed twice`, "duplicate");
    const added: Replica[] = [];
    const next = ids.map((id) => {
      const held = this.get(id);
      if (held) return held;
      const replica = this.fresh(this.upstreamFor(id), this.nextIndex++, "registered");
      added.push(replica);
      return replica;
    });
    const removed = this.replicas.filter((r) => !ids.includes(r.id));
    this.replicas.splice(0, this.replicas.length, ...next);
    this.wake();
    return { added, removed };
  }

  private fresh(upstream: Upstream, index: number, origin: ReplicaOrigin): Replica {
    return {
      id: replicaId(upstream.baseUrl),
      index,
      origin,
      upstream,
      inFlight: 0,
      health: new ReplicaHealth(this.drainMs),
    };
  }

  /** Healthy replicas; when every one is drained, all of them (an outage then shows the engine's own error). */
  healthy(exclude: ReadonlySet<string> = new Set()): Replica[] {
    const now = this.clock();
    const open = this.replicas.filter((r) => !exclude.has(r.id));
    const up = open.filter((r) => r.health.healthy(now));
    return up.length > 0 ? up : open;
  }

  /** A slot for this session's call, waiting briefly for one; `exclude` skips replicas that just failed it. */
  async acquire(identity: SessionIdentity, exclude: ReadonlySet<string> = new Set()): Promise<Acquired> {
    const deadline = this.clock() + this.queueWaitMs;
    const key = sessionKey(identity);
    for (;;) {
      const candidates = this.healthy(exclude);
      if (candidates.length === 0) {
        return {
          ok: false,
          retryAfterSeconds: this.retryAfterSeconds(),
          message: "no replica is left to try",
        };
      }
      const choice = this.choose(identity, key, candidates);
      if (choice) {
        choice.inFlight++;
        if (this.policy === "affinity") this.sticky.set(key, choice.id, this.clock());
        return { ok: true, lease: this.lease(choice) };
      }
      const left = deadline - this.clock();
      if (left <= 0 || !(await this.waitForSlot(left))) {
        return {
          ok: false,
          retryAfterSeconds: this.retryAfterSeconds(),
          message: `every engine replica that may serve this call has ${this.maxInFlight} calls in flight; retry after a moment`,
        };
      }
    }
  }

  /** Probe result or an answered call: back in rotation. */
  markHealthy(replica: Replica): void {
    replica.health.succeeded();
  }

  markFailed(replica: Replica): void {
    replica.health.failed(this.clock());
    this.wake();
  }

  private choose(identity: SessionIdentity, key: string, candidates: Replica[]): Replica | null {
    const now = this.clock();
    const affinity = this.policy === "affinity";
    const sticky = affinity ? this.sticky.get(key, now) : undefined;
    const loads: ReplicaLoad[] = candidates.map((r) => ({
      id: r.id,
      inFlight: r.inFlight,
      limit: this.maxInFlight,
      // The session itself does not count against its own replica.
      ...(affinity ? { sessions: this.sticky.sessionsOn(r.id, now) - (r.id === sticky ? 1 : 0) } : {}),
    }));
    const id = chooseReplica({
      policy: this.policy,
      replicas: loads,
      groupKey: groupKey(identity),
      sticky,
      turn: this.turn,
      loadFactor: this.loadFactor,
    });
    if (id === null) return null;
    if (this.policy === "round_robin") this.turn++;
    return candidates.find((r) => r.id === id) ?? null;
  }

  private lease(replica: Replica): Lease {
    let released = false;
    return {
      replica,
      release: (outcome) => {
        if (released) return;
        released = true;
        replica.inFlight--;
        if (outcome === "failed") replica.health.failed(this.clock());
        else replica.health.succeeded();
        this.wake();
      },
    };
  }

  private waitForSlot(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(onWake);
        resolve(woken);
      };
      const onWake = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.waiters.add(onWake);
    });
  }

  /** Every waiter re-runs its choice: a freed slot on one replica matters only to some of them. */
  private wake(): void {
    const all = [...this.waiters];
    this.waiters.clear();
    for (const w of all) w();
  }

  private retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.queueWaitMs / 1000));
  }
}

/** Why a change to the set was refused: `unknown` id, removing the `last` one, a `duplicate` in a list. */
export class ReplicaSetError extends Error {
  readonly reason: "unknown" | "last" | "duplicate";
  constructor(message: string, reason: "unknown" | "last" | "duplicate") {
    super(message);
    this.name = "ReplicaSetError";
    this.reason = reason;
  }
}

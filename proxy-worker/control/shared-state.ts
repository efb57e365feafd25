/**
 * The replica set and the policy version a trainer sets through the control API, kept in the
 * object store so every proxy (Node processes behind a load balancer, each Worker isolate) routes
 * and stamps by the same state (docs/control-api.md "Where this state lives").
 *
 * The guarantee: a change is in the store before its control call answers, and every model call
 * reads the store after it arrived, so a call that starts after `replace_replicas` or
 * `set_policy_version` returned, on any proxy, routes to the new set and is stamped with at least
 * that version. Nothing is cached between calls: concurrent calls share a read, but only one that
 * began after they arrived (a read already under way may have missed the change).
 *
 * Health, in-flight counts and session placement stay in each proxy's memory (`ReplicaSet`).
 */
import { z } from "zod";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { formatIssues } from "../../shared/zod-issues.ts";
import { type PolicyVersionSource, PolicyVersionText, type VersionSetter } from "../admin.ts";
import { type ReplicaSet, replicaId } from "../routing/replicas.ts";
import type { RuntimeState } from "./control-deps.ts";

const ReplicasDocument = z.strictObject({
  urls: z
    .array(z.url({ protocol: /^https?$/ }))
    .min(1)
    .max(1024)
    .refine((urls) => new Set(urls.map(replicaId)).size === urls.length, "a replica is listed twice"),
  updated_at: z.string(),
});
type ReplicasDocument = z.infer<typeof ReplicasDocument>;

const VersionDocument = z.strictObject({
  version: PolicyVersionText,
  set_by: z.enum(["proxy", "trainer"]),
  updated_at: z.string(),
});
type VersionDocument = z.infer<typeof VersionDocument>;

/** The store could not be read or written, or holds a document this proxy cannot use. */
export class SharedStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SharedStateError";
  }
}

export interface SharedStateOptions {
  store: ObjectStore;
  /** This proxy's set: its configured replicas until a trainer writes one. */
  replicas: ReplicaSet;
  /** What captures read (synchronously) once a call has refreshed it. */
  policyVersion: PolicyVersionSource;
  clock: () => number;
}

export class SharedRuntimeState implements RuntimeState {
  readonly replicas: ReplicaSet;
  readonly policyVersion: PolicyVersionSource;
  private readonly store: ObjectStore;
  private readonly clock: () => number;
  /** The flags' set, which holds while the store has none (a trainer never wrote one). */
  private readonly configured: string[];
  private readonly replicasRead: FreshRead<void>;
  private readonly versionRead: FreshRead<void>;

  constructor(opts: SharedStateOptions) {
    this.store = opts.store;
    this.replicas = opts.replicas;
    this.policyVersion = opts.policyVersion;
    this.clock = opts.clock;
    this.configured = opts.replicas.replicas.map((r) => r.id);
    // Applied inside the read: reads run one after another, so a later read's state is applied last.
    this.replicasRead = new FreshRead(async () => this.applyReplicas(await this.readReplicas()));
    this.versionRead = new FreshRead(async () => this.applyVersion(await this.readVersion()));
  }

  /** The set and the version as stored now (both read after this call began). */
  async refresh(): Promise<void> {
    await Promise.all([this.replicasRead.read(), this.versionRead.read()]);
  }

  /** The version alone, as stored now: how the end of a call learns of an update during it. */
  async refreshVersion(): Promise<void> {
    await this.versionRead.read();
  }

  /** Stored before it returns (every proxy's next call sees it), then applied here. */
  async saveReplicas(urls: readonly string[]): Promise<void> {
    const doc: ReplicasDocument = {
      urls: urls.map(replicaId),
      updated_at: new Date(this.clock()).toISOString(),
    };
    await this.write(keys.runtimeReplicas(), doc, "replica set");
    this.applyReplicas(doc);
  }

  async saveVersion(version: string, by: VersionSetter): Promise<void> {
    const doc: VersionDocument = { version, set_by: by, updated_at: new Date(this.clock()).toISOString() };
    await this.write(keys.runtimePolicyVersion(), doc, "policy version");
    this.applyVersion(doc);
  }

  private applyReplicas(doc: ReplicasDocument | null): void {
    const target = doc ? doc.urls.map(replicaId) : this.configured;
    const held = this.replicas.replicas.map((r) => r.id);
    if (held.length === target.length && held.every((id, i) => id === target[i])) return;
    // Replicas kept keep their health, in-flight count and sessions (ReplicaSet.replace).
    this.replicas.replace(target);
  }

  private applyVersion(doc: VersionDocument | null): void {
    // No document: nobody set one through the store, so the proxy's own (`--policy-version`) holds.
    if (!doc) return;
    if (this.policyVersion.get() === doc.version && this.policyVersion.setBy?.() === doc.set_by) return;
    this.policyVersion.set(doc.version, doc.set_by);
  }

  private readReplicas(): Promise<ReplicasDocument | null> {
    return this.read(keys.runtimeReplicas(), ReplicasDocument, "replica set");
  }

  private readVersion(): Promise<VersionDocument | null> {
    return this.read(keys.runtimePolicyVersion(), VersionDocument, "policy version");
  }

  private async read<T>(key: string, schema: z.ZodType<T>, what: string): Promise<T | null> {
    let bytes: Uint8Array | null;
    try {
      bytes = await this.store.get(key);
    } catch (err) {
      throw new SharedStateError(
        `could not read the trainer's ${what} (${key}) from ${this.store.url}: ${(err as Error).message}`,
      );
    }
    if (bytes === null) return null;
    let raw: unknown;
    try {
      raw = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      throw new SharedStateError(
        `${key} in ${this.store.url} is not JSON: rewrite it through the control API`,
      );
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success)
      throw new SharedStateError(
        `${key} in ${this.store.url} is not a ${what}: ${formatIssues(parsed.error)}; rewrite it through the control API`,
      );
    return parsed.data;
  }

  private async write(key: string, doc: unknown, what: string): Promise<void> {
    try {
      await this.store.put(key, JSON.stringify(doc), { contentType: "application/json" });
    } catch (err) {
      throw new SharedStateError(
        `could not store the ${what} (${key}) in ${this.store.url}: ${(err as Error).message}; nothing was changed`,
      );
    }
  }
}

/**
 * Reads that begin after their caller arrived, shared by every caller waiting at the same time:
 * at most one read in flight and one queued behind it, however many calls arrive.
 */
export class FreshRead<T> {
  private readonly load: () => Promise<T>;
  private inFlight: Promise<T> | null = null;
  private queued: Promise<T> | null = null;

  constructor(load: () => Promise<T>) {
    this.load = load;
  }

  read(): Promise<T> {
    if (!this.inFlight) return this.begin();
    // The read under way began before this caller arrived: the next one serves it.
    const after = this.inFlight.then(
      () => undefined,
      () => undefined,
    );
    this.queued ??= after.then(() => {
      this.queued = null;
      // A read begun since then began after these callers arrived too: join it, keeping one in flight.
      return this.inFlight ?? this.begin();
    });
    return this.queued;
  }

  private begin(): Promise<T> {
    const p: Promise<T> = this.load().finally(() => {
      if (this.inFlight === p) this.inFlight = null;
    });
    this.inFlight = p;
    return p;
  }
}

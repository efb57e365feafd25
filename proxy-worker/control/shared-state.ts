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
 *
 * Each proxy routes only to the stored replicas its own operator allows (`--allow-replica-addresses`):
 * the proxy that registered one checked it against its allowlist, not against this one's, and a
 * loopback replica allowed there would be this proxy's own host here (docs/security.md).
 */
import { z } from "zod";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { formatIssues } from "../../shared/zod-issues.ts";
import { type PolicyVersionSource, PolicyVersionText, type VersionSetter } from "../admin.ts";
import { type ReplicaAddressPolicy, refusedAddress } from "../routing/replica-address.ts";
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
  /** This proxy's allowlist, held against every stored replica it did not configure itself. Absent: none checked. */
  addresses?: ReplicaAddressPolicy;
  /** Where a stored replica this proxy will not call is named (once per stored set). */
  log?: (line: string) => void;
}

/** The stored set as this proxy may route it: the URLs it may call, or why it may call none. */
type Routable = { urls: string[]; refused: null } | { urls: null; refused: string };

export class SharedRuntimeState implements RuntimeState {
  readonly replicas: ReplicaSet;
  readonly policyVersion: PolicyVersionSource;
  private readonly store: ObjectStore;
  private readonly clock: () => number;
  /** The flags' set, which holds while the store has none (a trainer never wrote one). */
  private readonly configured: string[];
  private readonly replicasRead: FreshRead<void>;
  private readonly versionRead: FreshRead<void>;
  private readonly addresses: ReplicaAddressPolicy;
  private readonly log: (line: string) => void;
  /** The set as stored (the flags' while none is): what a registration or removal here builds on. */
  private stored: string[];
  /** Why no stored replica may be called from here, or null. */
  private refused: string | null = null;
  /** The last stored set checked against the allowlist, so a call re-checks only a changed set. */
  private checked: { key: string; routable: Routable } | null = null;

  constructor(opts: SharedStateOptions) {
    this.store = opts.store;
    this.replicas = opts.replicas;
    this.policyVersion = opts.policyVersion;
    this.clock = opts.clock;
    this.addresses = opts.addresses ?? {};
    this.log = opts.log ?? (() => {});
    this.configured = opts.replicas.replicas.map((r) => r.id);
    this.stored = [...this.configured];
    // Applied inside the read: reads run one after another, so a later read's state is applied last.
    this.replicasRead = new FreshRead(async () => this.applyReplicas(await this.readReplicas()));
    this.versionRead = new FreshRead(async () => this.applyVersion(await this.readVersion()));
  }

  /** The set and the version as stored now (both read after this call began). */
  async refresh(): Promise<void> {
    await Promise.all([this.replicasRead.read(), this.versionRead.read()]);
  }

  /** The set as stored, including replicas this proxy will not call: what `/v1/replicas` changes. */
  storedReplicas(): readonly string[] {
    return this.stored;
  }

  /**
   * Why a model call may not be routed from here after `refresh`: every stored replica is at an
   * address this proxy's operator has not allowed. Null: route by `replicas`.
   */
  refusedHere(): string | null {
    return this.refused;
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
    await this.applyReplicas(doc);
  }

  async saveVersion(version: string, by: VersionSetter): Promise<void> {
    const doc: VersionDocument = { version, set_by: by, updated_at: new Date(this.clock()).toISOString() };
    await this.write(keys.runtimePolicyVersion(), doc, "policy version");
    this.applyVersion(doc);
  }

  private async applyReplicas(doc: ReplicasDocument | null): Promise<void> {
    this.stored = doc ? doc.urls.map(replicaId) : [...this.configured];
    const routable = await this.routable(this.stored);
    this.refused = routable.refused;
    // The set cannot be empty: the old one stays, and every call is refused until the set changes.
    if (!routable.urls) return;
    const target = routable.urls;
    const held = this.replicas.replicas.map((r) => r.id);
    if (held.length === target.length && held.every((id, i) => id === target[i])) return;
    // Replicas kept keep their health, in-flight count and sessions (ReplicaSet.replace).
    this.replicas.replace(target);
  }

  /** The stored replicas this proxy may call: its own configured ones, and those its allowlist admits. */
  private async routable(urls: string[]): Promise<Routable> {
    const key = urls.join("\n");
    if (this.checked?.key === key) return this.checked.routable;
    const verdicts = await Promise.all(
      urls.map(async (url) => ({
        url,
        why: this.configured.includes(url) ? null : await refusedAddress(url, this.addresses),
      })),
    );
    const barred = verdicts.filter((v) => v.why !== null);
    for (const v of barred)
      this.log(
        `stored replica ${v.url} is not called from this proxy: ${v.why} (it was added through another proxy)`,
      );
    const allowed = verdicts.filter((v) => v.why === null).map((v) => v.url);
    const routable: Routable =
      allowed.length > 0
        ? { urls: allowed, refused: null }
        : {
            urls: null,
            refused: `every replica of the trainer's stored set (${urls.join(", ")}) is at an address this proxy's operator has not allowed`,
          };
    this.checked = { key, routable };
    return routable;
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

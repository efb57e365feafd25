import type { JobSender } from "../../shared/queue/job-sender.ts";
import type { PolicyVersionSource, VersionSetter } from "../admin.ts";
import type { ReplicaAddressPolicy } from "../routing/replica-address.ts";
import type { ReplicaSet } from "../routing/replicas.ts";

/** What the host hands `createProxyApp` to turn on the task control API (`/v1/tasks`). */
export interface ControlDeps {
  /** Where session jobs go: an SQS queue (Node: batch-runner's SqsQueue; Worker: SqsSender). */
  jobs: JobSender;
  /**
   * The control credential, required on every control call as `Authorization: Bearer <token>` or
   * `x-admin-token`. Comma-separated (or a list) to rotate: every entry is accepted.
   */
  controlToken?: string | readonly string[];
  /**
   * Used only when `controlToken` is unset: one credential for `/admin` and `/v1/tasks`, as before
   * they were split. With a control token set, the admin credential opens no control route.
   */
  adminToken?: string | readonly string[];
  /** Signs a time-limited GET URL for a store key (S3 stores); without it only keys are returned. */
  presignGet?: (key: string, expiresSeconds: number) => Promise<string>;
  /** Lifetime of presigned URLs. Default 3600 s. */
  presignExpiresSeconds?: number;
  /**
   * Where `/v1/replicas` may add a replica beyond public addresses (loopback, link-local, cloud
   * metadata), and how a host name is resolved to class it. Absent: addresses are not checked
   * (`polar proxy` allows none unless told, `polar serve` loopback).
   */
  replicaAddresses?: ReplicaAddressPolicy;
  /**
   * `/v1/replicas` and `/v1/policy-version` on: what they set is kept in the store
   * (`control/shared-state.ts`) and read by every model call, so every proxy and Worker isolate on
   * the same store routes and stamps alike. Off: they answer 501.
   */
  runtimeState?: boolean;
}

/**
 * What `/v1/replicas` and `/v1/policy-version` change: the replica set and version every proxy on
 * the store reads. `replicas` and `policyVersion` are this proxy's copies, current after `refresh`.
 */
export interface RuntimeState {
  replicas: ReplicaSet;
  policyVersion: PolicyVersionSource;
  /**
   * The set as stored, replicas this proxy does not call included (another proxy's operator allowed
   * an address this one does not): what a registration or removal through this proxy builds on.
   */
  storedReplicas(): readonly string[];
  /** Reads the stored set and version (a read begun after this call). */
  refresh(): Promise<void>;
  /** Stores the set (every proxy's next call routes by it), then applies it here. */
  saveReplicas(urls: readonly string[]): Promise<void>;
  saveVersion(version: string, by: VersionSetter): Promise<void>;
}

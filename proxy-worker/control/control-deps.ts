import type { JobSender } from "../../shared/queue/job-sender.ts";
import type { PolicyVersionSource } from "../admin.ts";
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
   * The host is one long-lived process (Node): `/v1/replicas` and `/v1/policy-version` change the
   * replica set and the version held in its memory. Off (501) in the Worker, where each isolate
   * would keep its own copy and calls would land on whichever isolate serves them.
   */
  runtimeState?: boolean;
}

/** What `/v1/replicas` and `/v1/policy-version` change: the gateway's own replica set and version. */
export interface RuntimeState {
  replicas: ReplicaSet;
  policyVersion: PolicyVersionSource;
}

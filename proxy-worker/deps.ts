import type { Hono } from "hono";
import type { GzipFn } from "../shared/encoding/gzip.ts";
import type { LogprobsMode } from "../shared/schemas/capture.ts";
import type { SessionLimits } from "../shared/schemas/proxy-limits.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import type { PolicyVersionSource } from "./admin.ts";
import type { AuthConfig } from "./auth.ts";
import type { CodecRegistry } from "./codecs/registry.ts";
import type { ControlDeps } from "./control/control-deps.ts";
import type { SharedRuntimeState } from "./control/shared-state.ts";
import type { CredentialList } from "./credentials.ts";
import type { EngineAdapter, EngineName } from "./engines/engine.ts";
import type { EngineVersions } from "./engines/weight-version.ts";
import type { SessionLimiter } from "./fair-share/session-limiter.ts";
import type { Limits } from "./limits.ts";
import type { ProxyMetrics } from "./metrics.ts";
import type { ModelCatalog } from "./models.ts";
import type { ReplicaSet } from "./routing/replicas.ts";
import type { StreamMode } from "./stream/stream-mode.ts";
import type { CompletionsChannel } from "./tito/completions-channel.ts";
import type { SessionCaptureCache } from "./tito/session-lookup.ts";
import type { Upstream } from "./upstream.ts";

/** What the host (Node adapter, Worker entry, a test) hands the app factory. */
export interface ProxyDeps {
  store: ObjectStore;
  upstream: Upstream;
  /**
   * Engine replicas (data parallel) with their routing policy; when given, model calls go through
   * it and `upstream` only serves model listing. Default: `upstream` alone. See docs/routing.md.
   */
  replicas?: ReplicaSet;
  /** Default `vllm`. */
  engine?: EngineName;
  /** What the engine's logprobs mean, when the server runs with a non-default mode (`--logprobs-mode`). */
  logprobsMode?: LogprobsMode;
  /** How client streams are answered (proxy-worker/stream/stream-mode.ts); default `live` where the engine streams ids. */
  streamMode?: StreamMode;
  /** `live` mode: frames within this many ms of the last write go out together (default 100; 0: every chunk). */
  streamFlushMs?: number;
  /** HMAC key for session tokens; required unless `auth: "off"`. */
  signingKey?: string;
  /** `off` (local development only): any key is accepted and names the session. */
  auth?: "off" | "token";
  limits?: Partial<Limits>;
  /** Pass http(s) image URLs to the engine (images/vet-images.ts); default false: refused. */
  allowRemoteImages?: boolean;
  /**
   * Routes a host adds beside the control API, before the provider routes: Node mounts the
   * read-only viewer under `/viewer` with it (the Worker has no tokenizer to decode traces).
   */
  extraRoutes?: (app: Hono) => void;
  /** The version stamped on captures when the engine reports none; default: in-memory, starting at null. */
  policyVersion?: PolicyVersionSource | string | null;
  /**
   * The admin credential: guards `/admin/*` (404 without it) and is the only one that may set
   * `x-polar-policy-version`. Comma-separated (or a list) to rotate: every entry is accepted.
   */
  adminToken?: string | readonly string[];
  /** Milliseconds since the epoch. */
  clock?: () => number;
  /** Provider -> codec; defaults to the four built-in codecs. */
  codecs?: CodecRegistry;
  /** Where operational failures go (capture store down, codec bugs). Default console.error. */
  log?: (message: string) => void;
  captureRetry?: { attempts?: number; baseDelayMs?: number };
  /** Turns on the task control API (`/v1/tasks`, `/openapi.json`); see proxy-worker/control/. */
  control?: ControlDeps;
  /** One log line per call (method, path, provider, session, status, ms): `--log-requests`. */
  logRequests?: boolean;
  /** Compresses captures (must write gzip). Default CompressionStream; the Node adapter passes node:zlib. */
  gzip?: GzipFn;
  /**
   * Answer with `Connection: close` when a body over 1 MiB (or of unknown size) is left unread
   * (unknown route, failed auth), so the server never takes its bytes in. The Node adapter sets
   * it; a Worker's platform discards unread bodies itself, and closing there only costs clients.
   */
  closeOnUnreadBody?: boolean;
  /** Token-in-token-out for every session, not only tasks that ask for it (docs/tito.md). */
  tokenInTokenOut?: boolean;
  /** vLLM without a chat token channel: send token prompts to `/v1/completions`, parsed per model. */
  titoCompletions?: CompletionsChannel;
  /**
   * Read the engine's own weight version (`GET /weight_info`, vLLM's RL endpoints) before and after
   * each call (engines/weight-version.ts). Default: on for vLLM (SGLang reports it in the answer).
   */
  engineVersions?: boolean;
  /**
   * Fair share for sessions whose token carries no limits (`polar token`, `--auth off`, older
   * runners): calls in flight and tokens per minute. Default: none. docs/security.md "Fair share".
   */
  sessionLimits?: SessionLimits;
  /**
   * Requests per minute one address may send without a valid credential (answered 401 or 404)
   * before it gets 429; off when absent. `header` names a header a trusted reverse proxy sets to
   * the client's address (its last entry is used), instead of the host's `clientAddress`.
   */
  addressLimit?: { perMinute: number; header?: string };
  /** The client's address as the host sees it: the socket's peer on Node, `cf-connecting-ip` on Workers. */
  clientAddress?: (request: Request, env: unknown) => string | null;
}

/** The deps with defaults applied, shared by the route handlers. */
export interface Gateway {
  store: ObjectStore;
  upstream: Upstream;
  replicas: ReplicaSet;
  engine: EngineAdapter;
  logprobsMode: LogprobsMode;
  streamMode: StreamMode;
  streamFlushMs: number;
  metrics: ProxyMetrics;
  auth: AuthConfig;
  limits: Limits;
  allowRemoteImages: boolean;
  adminTokens: CredentialList;
  policyVersion: PolicyVersionSource;
  /**
   * The trainer's replica set and version in the store, read by every model call (with the control
   * API's runtime routes on); null: this proxy's own set and version are the state.
   */
  runtime: SharedRuntimeState | null;
  engineVersions: EngineVersions;
  clock: () => number;
  codecs: CodecRegistry;
  log: (message: string) => void;
  captureRetry: { attempts?: number; baseDelayMs?: number };
  models: ModelCatalog;
  gzip: GzipFn | undefined;
  closeOnUnreadBody: boolean;
  /** Per-session calls in flight and tokens per minute (fair-share/). */
  fairShare: SessionLimiter;
  tito: {
    forAllSessions: boolean;
    cache: SessionCaptureCache;
    completions: CompletionsChannel | null;
    /** Whether the engine serves the native generate endpoint, probed on first need. */
    generateProbe?: Promise<boolean>;
  };
}

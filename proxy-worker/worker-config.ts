import { z } from "zod";
import { credentialsFromEnv } from "../shared/aws/aws-client.ts";
import { SqsSender } from "../shared/queue/sqs-sender.ts";
import { LogprobsMode } from "../shared/schemas/capture.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { type R2BucketLike, R2Store } from "../shared/store/r2-store.ts";
import { S3FetchStore } from "../shared/store/s3-fetch-store.ts";
import { formatIssues } from "../shared/zod-issues.ts";
import type { ControlDeps } from "./control/control-deps.ts";
import type { ProxyDeps } from "./deps.ts";
import { ENGINES } from "./engines/engine.ts";
import { ROUTING_POLICIES } from "./routing/policies.ts";
import { ReplicaSet } from "./routing/replicas.ts";
import { STREAM_MODES } from "./stream/stream-mode.ts";
import { parseParserSpec } from "./tito/completions-channel.ts";

/**
 * The Worker's settings, from wrangler vars and secrets (infra/wrangler.jsonc lists them all).
 * Strings only: bindings (CAPTURES) are checked separately.
 */
const WorkerVars = z.object({
  UPSTREAM_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Several engine replicas, separated by commas or whitespace (UPSTREAM_URL, if set, comes first). */
  UPSTREAM_URLS: z
    .string()
    .transform((s) => s.split(/[\s,]+/).filter(Boolean))
    .pipe(z.array(z.url({ protocol: /^https?$/ })))
    .optional(),
  ROUTING: z.enum(ROUTING_POLICIES).default("affinity"),
  REPLICA_MAX_IN_FLIGHT: z.coerce.number().int().positive().max(100_000).optional(),
  QUEUE_WAIT_MS: z.coerce.number().int().nonnegative().max(60_000).default(2000),
  ENGINE: z.enum(ENGINES).default("vllm"),
  /** What the engine's logprobs mean when it runs with a non-default mode (default: the engine's). */
  LOGPROBS_MODE: LogprobsMode.optional(),
  /** `live` (default where the engine streams ids) or `synthesize`; see docs/proxy.md "Streaming". */
  STREAM_MODE: z.enum(STREAM_MODES).optional(),
  /** Live mode: frames within this many ms of the last write go out together (default 100; 0: every chunk). */
  STREAM_FLUSH_MS: z.coerce.number().int().nonnegative().max(10_000).optional(),
  POLAR_SIGNING_KEY: z.string().min(1).optional(),
  /** `off` accepts any key as the session id: local development only. */
  POLAR_AUTH: z.enum(["off", "token"]).default("token"),
  STORE: z.enum(["r2", "s3"]).default("r2"),
  R2_PREFIX: z.string().default(""),
  S3_BUCKET: z.string().min(1).optional(),
  S3_PREFIX: z.string().default(""),
  S3_ENDPOINT: z.url().optional(),
  S3_REGION: z.string().min(1).optional(),
  /** Comma-separated to rotate (current,next); see docs/security.md. */
  POLAR_ADMIN_TOKEN: z.string().min(1).optional(),
  /** The task control API's own credential; without it the admin token serves both. */
  POLAR_CONTROL_TOKEN: z.string().min(1).optional(),
  JOBS_QUEUE_URL: z.url().optional(),
  SQS_ENDPOINT: z.url().optional(),
  SQS_REGION: z.string().min(1).optional(),
  POLICY_VERSION: z.string().min(1).optional(),
  UPSTREAM_TIMEOUT_S: z.coerce.number().positive().max(86_400).default(600),
  MAX_BODY_MB: z.coerce.number().positive().max(4096).default(32),
  BODY_TIMEOUT_S: z.coerce.number().positive().max(3600).default(30),
  BODY_IDLE_TIMEOUT_S: z.coerce.number().positive().max(3600).default(10),
  MAX_JSON_DEPTH: z.coerce.number().int().positive().max(100_000).default(128),
  /** As `polar proxy --max-image-mb` and `--allow-remote-images` (docs/computer-use.md). */
  MAX_IMAGE_MB: z.coerce.number().positive().max(4096).default(10),
  /** As `polar proxy --max-image-pixels`, `--max-images-per-call`, `--max-session-images`, `--max-session-image-mb`. */
  MAX_IMAGE_PIXELS: z.coerce
    .number()
    .int()
    .positive()
    .max(2 ** 40)
    .optional(),
  MAX_IMAGES_PER_CALL: z.coerce.number().int().positive().max(100_000).optional(),
  MAX_SESSION_IMAGES: z.coerce.number().int().positive().max(100_000_000).optional(),
  MAX_SESSION_IMAGE_MB: z.coerce.number().positive().max(1_048_576).optional(),
  ALLOW_REMOTE_IMAGES: z.enum(["on", "off"]).default("off"),
  STORE_TIMEOUT_S: z.coerce.number().positive().max(3600).default(20),
  PRESIGN_EXPIRES_S: z.coerce.number().int().positive().max(604_800).default(3600),
  /** As `polar proxy --token-in-token-out` and `--tito-completions` (docs/tito.md). */
  TOKEN_IN_TOKEN_OUT: z.enum(["on", "off"]).default("off"),
  TITO_COMPLETIONS: z.string().min(1).optional(),
  /** Fair share for sessions whose token carries no limits (docs/security.md "Fair share at the proxy"). */
  SESSION_MAX_IN_FLIGHT: z.coerce.number().int().positive().max(4096).optional(),
  SESSION_TOKENS_PER_MINUTE: z.coerce.number().int().positive().max(10_000_000_000).optional(),
  /** Requests per minute from one address without a valid credential; 0 turns the limit off. */
  ADDRESS_LIMIT_PER_MINUTE: z.coerce.number().int().nonnegative().max(1_000_000).default(120),
});

/** Why the Worker cannot serve: every request gets this message (500) until the config is fixed. */
export class WorkerConfigError extends Error {}

/** ProxyDeps from the Worker's env; throws WorkerConfigError naming every setting that is wrong. */
export function depsFromEnv(env: Record<string, unknown>, fetcher: typeof fetch): ProxyDeps {
  // Empty strings are how an unset var often arrives from dashboards and .dev.vars files.
  const strings = Object.fromEntries(
    Object.entries(env).filter(([, v]) => typeof v === "string" && v !== ""),
  );
  const parsed = WorkerVars.safeParse(strings);
  if (!parsed.success) {
    throw new WorkerConfigError(`Worker configuration is invalid: ${formatIssues(parsed.error)}`);
  }
  const vars = parsed.data;
  if (vars.POLAR_AUTH === "token" && !vars.POLAR_SIGNING_KEY) {
    throw new WorkerConfigError(
      "POLAR_SIGNING_KEY is not set: add it as a secret (wrangler secret put POLAR_SIGNING_KEY), or set POLAR_AUTH=off for local development",
    );
  }
  const titoCompletions = vars.TITO_COMPLETIONS ? parseParserSpec(vars.TITO_COMPLETIONS) : undefined;
  if (typeof titoCompletions === "string")
    throw new WorkerConfigError(`TITO_COMPLETIONS: ${titoCompletions}`);
  const urls = [...(vars.UPSTREAM_URL ? [vars.UPSTREAM_URL] : []), ...(vars.UPSTREAM_URLS ?? [])];
  if (urls.length === 0) {
    throw new WorkerConfigError("UPSTREAM_URL (or UPSTREAM_URLS) is not set: name the inference server(s)");
  }
  const { store, presignGet } = openWorkerStore(vars, env);
  const upstreams = urls.map((baseUrl) => ({
    baseUrl,
    fetch: fetcher,
    timeoutMs: vars.UPSTREAM_TIMEOUT_S * 1000,
  }));
  let replicas: ReplicaSet;
  try {
    replicas = new ReplicaSet(upstreams, {
      policy: vars.ROUTING,
      maxInFlight: vars.REPLICA_MAX_IN_FLIGHT,
      queueWaitMs: vars.QUEUE_WAIT_MS,
    });
  } catch (err) {
    throw new WorkerConfigError(`UPSTREAM_URL/UPSTREAM_URLS: ${(err as Error).message}`);
  }
  return {
    store,
    upstream: upstreams[0],
    replicas,
    engine: vars.ENGINE,
    ...(vars.LOGPROBS_MODE ? { logprobsMode: vars.LOGPROBS_MODE } : {}),
    ...(vars.STREAM_MODE ? { streamMode: vars.STREAM_MODE } : {}),
    ...(vars.STREAM_FLUSH_MS !== undefined ? { streamFlushMs: vars.STREAM_FLUSH_MS } : {}),
    ...(vars.POLAR_AUTH === "off" ? { auth: "off" as const } : { signingKey: vars.POLAR_SIGNING_KEY }),
    adminToken: vars.POLAR_ADMIN_TOKEN,
    policyVersion: vars.POLICY_VERSION ?? null,
    limits: {
      maxBodyBytes: Math.floor(vars.MAX_BODY_MB * 1024 * 1024),
      bodyTimeoutMs: Math.round(vars.BODY_TIMEOUT_S * 1000),
      bodyIdleTimeoutMs: Math.round(vars.BODY_IDLE_TIMEOUT_S * 1000),
      maxJsonDepth: vars.MAX_JSON_DEPTH,
      maxImageBytes: Math.floor(vars.MAX_IMAGE_MB * 1024 * 1024),
      ...(vars.MAX_IMAGE_PIXELS ? { maxImagePixels: vars.MAX_IMAGE_PIXELS } : {}),
      ...(vars.MAX_IMAGES_PER_CALL ? { maxImagesPerCall: vars.MAX_IMAGES_PER_CALL } : {}),
      ...(vars.MAX_SESSION_IMAGES ? { maxSessionImages: vars.MAX_SESSION_IMAGES } : {}),
      ...(vars.MAX_SESSION_IMAGE_MB
        ? { maxSessionImageBytes: Math.floor(vars.MAX_SESSION_IMAGE_MB * 1024 * 1024) }
        : {}),
    },
    ...(vars.ALLOW_REMOTE_IMAGES === "on" ? { allowRemoteImages: true } : {}),
    control: controlFromEnv(vars, env, presignGet),
    ...(vars.TOKEN_IN_TOKEN_OUT === "on" ? { tokenInTokenOut: true } : {}),
    ...(titoCompletions ? { titoCompletions } : {}),
    sessionLimits: {
      ...(vars.SESSION_MAX_IN_FLIGHT ? { maxInFlight: vars.SESSION_MAX_IN_FLIGHT } : {}),
      ...(vars.SESSION_TOKENS_PER_MINUTE ? { tokensPerMinute: vars.SESSION_TOKENS_PER_MINUTE } : {}),
    },
    ...(vars.ADDRESS_LIMIT_PER_MINUTE > 0
      ? { addressLimit: { perMinute: vars.ADDRESS_LIMIT_PER_MINUTE } }
      : {}),
    // Cloudflare sets it on every request to the client's address; a client cannot forge it.
    clientAddress: (request) => request.headers.get("cf-connecting-ip"),
  };
}

type Vars = z.infer<typeof WorkerVars>;

function openWorkerStore(
  vars: Vars,
  env: Record<string, unknown>,
): { store: ObjectStore; presignGet?: ControlDeps["presignGet"] } {
  if (vars.STORE === "r2") {
    const bucket = env.CAPTURES as R2BucketLike | undefined;
    if (!bucket || typeof bucket.put !== "function") {
      throw new WorkerConfigError(
        "STORE is r2 but the CAPTURES R2 bucket binding is missing: add it under r2_buckets in wrangler.jsonc (or set STORE=s3)",
      );
    }
    return {
      store: new R2Store({ bucket, prefix: vars.R2_PREFIX, name: "CAPTURES", timeouts: storeTimeouts(vars) }),
    };
  }
  const credentials = credentialsFromEnv(env);
  if (!vars.S3_BUCKET || !credentials) {
    throw new WorkerConfigError(
      "STORE is s3 but S3_BUCKET, AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is missing (set the keys as secrets)",
    );
  }
  const store = new S3FetchStore({
    bucket: vars.S3_BUCKET,
    prefix: vars.S3_PREFIX,
    endpoint: vars.S3_ENDPOINT,
    region: vars.S3_REGION,
    credentials,
    timeouts: storeTimeouts(vars),
  });
  // Presigned URLs name the full key, so the store's prefix is applied by presignGet itself.
  return { store, presignGet: (key, seconds) => store.presignGet(key, seconds) };
}

function controlFromEnv(
  vars: Vars,
  env: Record<string, unknown>,
  presignGet: ControlDeps["presignGet"],
): ControlDeps | undefined {
  if (!(vars.POLAR_CONTROL_TOKEN || vars.POLAR_ADMIN_TOKEN) || !vars.JOBS_QUEUE_URL) return undefined;
  const credentials = credentialsFromEnv(env);
  if (!credentials) {
    throw new WorkerConfigError(
      "JOBS_QUEUE_URL is set but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not: the control API signs its SQS calls with them",
    );
  }
  return {
    adminToken: vars.POLAR_ADMIN_TOKEN,
    controlToken: vars.POLAR_CONTROL_TOKEN,
    jobs: new SqsSender({
      queueUrl: vars.JOBS_QUEUE_URL,
      credentials,
      endpoint: vars.SQS_ENDPOINT,
      region: vars.SQS_REGION,
    }),
    presignGet,
    presignExpiresSeconds: vars.PRESIGN_EXPIRES_S,
    // Kept in the store and read per call, so every isolate routes and stamps alike.
    runtimeState: true,
  };
}

/** Store deadlines from the Worker's vars: the binding or fetch call is given up on after STORE_TIMEOUT_S. */
function storeTimeouts(vars: Vars): { requestMs: number } {
  return { requestMs: Math.round(vars.STORE_TIMEOUT_S * 1000) };
}

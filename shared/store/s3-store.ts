import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { compareBytes } from "./memory-store.ts";
import type { ObjectStore, PutOptions } from "./object-store.ts";
import { baseUrlFrom, FastPut, type PutTransport, type SentRequest } from "./s3-fast-put.ts";
import { assertStoreKey } from "./store-key.ts";
import {
  bodyLength,
  deadlineFor,
  follow,
  StoreTimeoutError,
  type StoreTimeouts,
  storeTimeouts,
  withDeadline,
} from "./store-timeouts.ts";

export interface S3StoreOptions {
  bucket: string;
  /** Folder inside the bucket; a trailing "/" is added if missing. */
  prefix?: string;
  /** Defaults to `s3ClientFromEnv()`, which also applies the connect timeout. */
  client?: S3Client;
  /** Default DEFAULT_STORE_TIMEOUTS (or POLAR_STORE_TIMEOUT_S); every operation gets the deadline. */
  timeouts?: Partial<StoreTimeouts>;
  /**
   * Send `put` as one signed request over this transport instead of through the SDK's stack
   * (s3-fast-put.ts), where the client's addressing allows; every other call stays on the SDK.
   */
  putTransport?: PutTransport;
}

/**
 * ObjectStore over the S3 API (AWS S3, R2's S3 API, MinIO, other compatible servers).
 * The SDK runs on fetch, so this also works inside Workers.
 *
 * putIfAbsent is a conditional PUT (`If-None-Match: *`, answered 412 when the key exists).
 * A server that answers that header with 501 NotImplemented is remembered as lacking it, and
 * putIfAbsent then does HEAD + PUT, which is NOT atomic (`capabilities.atomicPutIfAbsent`
 * turns false). A server that silently ignores the header cannot be detected this way.
 */
export class S3Store implements ObjectStore {
  readonly capabilities = { atomicPutIfAbsent: true };
  readonly url: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly client: S3Client;
  private readonly timeouts: StoreTimeouts;
  private readonly putTransport?: PutTransport;
  /** Learned from the first PUT the SDK sends; null: this store's puts stay on the SDK. */
  private fastPut?: FastPut | null;

  constructor(opts: S3StoreOptions) {
    if (!opts.bucket) throw new S3StoreError("S3Store needs a bucket name");
    this.bucket = opts.bucket;
    const prefix = opts.prefix ?? "";
    this.prefix = prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`;
    if (this.prefix !== "") assertStoreKey(this.prefix, "prefix");
    this.timeouts = storeTimeouts(opts.timeouts);
    this.client = opts.client ?? s3ClientFromEnv(undefined, {}, this.timeouts);
    this.url = `s3://${this.bucket}/${this.prefix}`;
    this.putTransport = opts.putTransport;
  }

  async put(key: string, body: Uint8Array | string, opts?: PutOptions): Promise<void> {
    const fast = this.fastPut;
    if (fast) {
      const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
      const fullKey = this.fullKey(key);
      await this.send("PUT", key, (signal) => fast.put(fullKey, bytes, opts, signal), bytes.byteLength);
      return;
    }
    const command = new PutObjectCommand(this.putInput(key, body, opts));
    let sent: SentRequest | undefined;
    if (this.putTransport && fast === undefined) {
      command.middlewareStack.add(
        (next) => async (args) => {
          sent = args.request as SentRequest;
          return next(args);
        },
        { step: "finalizeRequest", priority: "low" },
      );
    }
    await this.send(
      "PUT",
      key,
      (abortSignal) => this.client.send(command, { abortSignal }),
      bodyLength(body),
    );
    if (sent && this.fastPut === undefined) await this.learnFastPut(sent, command.input.Key ?? "");
  }

  async putIfAbsent(key: string, body: Uint8Array | string, opts?: PutOptions): Promise<boolean> {
    if (!this.capabilities.atomicPutIfAbsent) return this.headThenPut(key, body, opts);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.deadline("PUT (If-None-Match)", key, bodyLength(body), (abortSignal) =>
          this.client.send(new PutObjectCommand({ ...this.putInput(key, body, opts), IfNoneMatch: "*" }), {
            abortSignal,
          }),
        );
        return true;
      } catch (err) {
        if (status(err) === 412 || nameOf(err) === "PreconditionFailed") return false;
        // AWS answers 409 when another conditional write to the key is in flight; the retry
        // then sees the winner's object (412) or writes.
        if ((status(err) === 409 || nameOf(err) === "ConditionalRequestConflict") && attempt < 5) {
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
          continue;
        }
        if (status(err) === 501 || nameOf(err) === "NotImplemented") {
          this.capabilities.atomicPutIfAbsent = false;
          return this.headThenPut(key, body, opts);
        }
        throw this.wrap("PUT (If-None-Match)", key, err);
      }
    }
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      // Headers first, then the body with time for its announced length.
      const request = new AbortController();
      const out = await this.deadline("GET", key, 0, (signal) => {
        follow(signal, request);
        return this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }), {
          abortSignal: request.signal,
        });
      });
      const body = out.Body;
      if (!body) return new Uint8Array(0);
      return await this.deadline("GET", key, out.ContentLength ?? 0, (signal) => {
        follow(signal, request);
        return body.transformToByteArray();
      });
    } catch (err) {
      if (isMissing(err)) return null;
      throw this.wrap("GET", key, err);
    }
  }

  async list(prefix: string): Promise<string[]> {
    assertStoreKey(prefix, "prefix");
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.send("LIST", prefix, (abortSignal) =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix + prefix,
            ContinuationToken: token,
          }),
          { abortSignal },
        ),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key?.startsWith(this.prefix)) keys.push(object.Key.slice(this.prefix.length));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      if (page.IsTruncated && !token) {
        throw new S3StoreError(
          `LIST ${this.url}${prefix}: the server said the listing is truncated but gave no continuation token`,
        );
      }
    } while (token);
    // S3 lists in byte order already; compatible servers do not all do so.
    return keys.sort(compareBytes);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.deadline("DELETE", key, 0, (abortSignal) =>
        this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }), {
          abortSignal,
        }),
      );
    } catch (err) {
      if (isMissing(err)) return;
      throw this.wrap("DELETE", key, err);
    }
  }

  private async headThenPut(key: string, body: Uint8Array | string, opts?: PutOptions): Promise<boolean> {
    try {
      await this.deadline("HEAD", key, 0, (abortSignal) =>
        this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }), {
          abortSignal,
        }),
      );
      return false;
    } catch (err) {
      if (!isMissing(err)) throw this.wrap("HEAD", key, err);
    }
    await this.put(key, body, opts);
    return true;
  }

  private async learnFastPut(sent: SentRequest, fullKey: string): Promise<void> {
    const transport = this.putTransport;
    if (!transport) return;
    const base = baseUrlFrom(sent, this.bucket, fullKey);
    const attempts = await (this.client.config as { maxAttempts?: () => Promise<number> }).maxAttempts?.();
    this.fastPut ??= base === null ? null : new FastPut(this.client, base, transport, attempts ?? 3);
  }

  private putInput(key: string, body: Uint8Array | string, opts?: PutOptions) {
    return {
      Bucket: this.bucket,
      Key: this.fullKey(key),
      Body: typeof body === "string" ? new TextEncoder().encode(body) : body,
      ContentType: opts?.contentType,
      ContentEncoding: opts?.contentEncoding,
    };
  }

  private fullKey(key: string): string {
    return this.prefix + assertStoreKey(key);
  }

  private async send<T>(
    op: string,
    key: string,
    call: (abortSignal: AbortSignal) => Promise<T>,
    bytes = 0,
  ): Promise<T> {
    try {
      return await this.deadline(op, key, bytes, call);
    } catch (err) {
      throw this.wrap(op, key, err);
    }
  }

  private deadline<T>(
    op: string,
    key: string,
    bytes: number,
    call: (abortSignal: AbortSignal) => Promise<T>,
  ) {
    return withDeadline(`${op} ${this.url}${key}`, deadlineFor(this.timeouts, bytes), call);
  }

  private wrap(op: string, key: string, err: unknown): Error {
    if (err instanceof S3StoreError) return err;
    if (err instanceof StoreTimeoutError) return new S3StoreError(err.message, { cause: err });
    const code = status(err);
    return new S3StoreError(
      `${op} ${this.url}${key} failed: ${nameOf(err) ?? "error"}${code ? ` (HTTP ${code})` : ""}: ${(err as Error)?.message ?? String(err)}`,
      { cause: err },
    );
  }
}

export class S3StoreError extends Error {}

type Env = Record<string, string | undefined>;

/**
 * An S3Client from the standard AWS variables: AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL),
 * AWS_REGION (or AWS_DEFAULT_REGION; default us-east-1), credentials from AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN if given, else the SDK's default chain. Path-style
 * addressing when an endpoint is set or AWS_S3_FORCE_PATH_STYLE=1. Checksums only when the
 * API requires them: the newer SDK default (CRC32 trailers) breaks many compatible servers.
 */
export function s3ClientFromEnv(
  env: Env = defaultEnv(),
  overrides: S3ClientConfig = {},
  timeouts: StoreTimeouts = storeTimeouts(undefined, env),
): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const forcePath = env.AWS_S3_FORCE_PATH_STYLE === "1" || env.AWS_S3_FORCE_PATH_STYLE === "true";
  const credentials =
    env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? {
          accessKeyId: env.AWS_ACCESS_KEY_ID,
          secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
          sessionToken: env.AWS_SESSION_TOKEN || undefined,
        }
      : undefined;
  return new S3Client({
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || "us-east-1",
    endpoint,
    forcePathStyle: Boolean(endpoint) || forcePath,
    credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // Connect bounded here; a stalled answer is bounded by the per-operation deadline and the idle limit.
    requestHandler: { connectionTimeout: timeouts.connectMs, socketTimeout: timeouts.requestMs },
    ...overrides,
  });
}

function defaultEnv(): Env {
  // `process` exists in Node and in Workers with nodejs_compat; elsewhere pass env explicitly.
  return (globalThis as { process?: { env: Env } }).process?.env ?? {};
}

function status(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function nameOf(err: unknown): string | undefined {
  return (err as { name?: string; Code?: string } | undefined)?.Code ?? (err as { name?: string })?.name;
}

/** A missing key; a missing bucket (also 404) is a configuration error and must surface. */
function isMissing(err: unknown): boolean {
  const name = nameOf(err);
  if (name === "NoSuchBucket") return false;
  return name === "NoSuchKey" || name === "NotFound" || status(err) === 404;
}

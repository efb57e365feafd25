import type { S3Client } from "@aws-sdk/client-s3";
import { awsErrorDetail } from "../aws/aws-client.ts";
import type { PutOptions } from "./object-store.ts";

/** One HTTP PUT; Node passes undici's `request` (shared/node/s3-put-transport.ts). */
export type PutTransport = (
  url: string,
  init: { headers: Record<string, string>; body: Uint8Array; signal: AbortSignal },
) => Promise<{ status: number; text(): Promise<string> }>;

/**
 * PutObject without the SDK's middleware stack: the client's own SigV4 signer (so its credential
 * chain, refresh and clock-skew offset) and one HTTP request. A 32 KB capture costs 0.3-0.5 ms of
 * CPU this way against 0.8-1.0 ms through `client.send` (docs/storage.md, BENCHMARKS.md), and every
 * captured call on S3 pays it. The URL is the one the SDK itself resolved for an earlier PUT
 * (`baseUrlFrom`), so the endpoint rules stay the SDK's.
 */
export class FastPut {
  private readonly client: S3Client;
  private readonly base: string;
  private readonly transport: PutTransport;
  private readonly attempts: number;
  private readonly retryBaseMs: number;
  private signer?: ReturnType<SigningConfig["signer"]>;

  constructor(client: S3Client, base: string, transport: PutTransport, attempts: number, retryBaseMs = 100) {
    this.client = client;
    this.base = base;
    this.transport = transport;
    this.attempts = Math.max(1, attempts);
    this.retryBaseMs = retryBaseMs;
  }

  /** The object's URL: `base` + the key with each segment escaped as S3 signs it. */
  urlOf(fullKey: string): string {
    return this.base + keyPath(fullKey);
  }

  /** Retries what the SDK's standard strategy retries (network errors, 429, 5xx), within `signal`. */
  async put(
    fullKey: string,
    body: Uint8Array,
    opts: PutOptions | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const url = new URL(this.urlOf(fullKey));
    for (let attempt = 1; ; attempt++) {
      let failure: unknown;
      try {
        const headers = await this.sign(url, body, opts);
        const res = await this.transport(url.href, { headers, body, signal });
        const text = await res.text();
        if (res.status >= 200 && res.status < 300) return;
        failure = s3Error(res.status, text);
        if (!retryable(res.status)) throw failure;
      } catch (err) {
        if (signal.aborted || err === failure) throw err;
        failure = err;
      }
      if (attempt >= this.attempts) throw failure;
      // Full jitter, as the SDK's standard strategy does.
      await sleep(Math.random() * this.retryBaseMs * 2 ** (attempt - 1), signal);
    }
  }

  private async sign(
    url: URL,
    body: Uint8Array,
    opts: PutOptions | undefined,
  ): Promise<Record<string, string>> {
    const config = this.client.config as unknown as SigningConfig;
    // Built once: it reads credentials through the client's memoized (refreshing) provider per call.
    this.signer ??= config.signer();
    const signer = await this.signer;
    const headers: Record<string, string> = { host: url.host, "content-length": String(body.byteLength) };
    if (opts?.contentType) headers["content-type"] = opts.contentType;
    if (opts?.contentEncoding) headers["content-encoding"] = opts.contentEncoding;
    const signed = await signer.sign(
      {
        method: "PUT",
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port === "" ? undefined : Number(url.port),
        path: url.pathname,
        query: {},
        headers,
        body,
      },
      {
        signingDate: new Date(Date.now() + (config.systemClockOffset ?? 0)),
        signingRegion: await config.region(),
        signingService: "s3",
      },
    );
    // The transport names the host from the URL, the same value that was signed.
    const { host: _host, ...out } = signed.headers;
    return out;
  }
}

interface SigningConfig {
  signer(): Promise<{
    sign(
      request: Record<string, unknown> & { headers: Record<string, string> },
      opts: { signingDate: Date; signingRegion: string; signingService: string },
    ): Promise<{ headers: Record<string, string> }>;
  }>;
  region(): Promise<string>;
  systemClockOffset?: number;
}

/** Where the SDK sent a PutObject (its `finalizeRequest` step), to learn the bucket's base URL. */
export interface SentRequest {
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
}

/**
 * The base URL (no trailing slash) the SDK resolved for this bucket, read off a PutObject it sent
 * for `fullKey`: whatever set the endpoint (options, AWS_ENDPOINT_URL_S3, a profile's
 * `endpoint_url`, FIPS or dual-stack), the fast path then uses the same one. Null where the path
 * does not end in the key as escaped here, or for buckets signed another way (S3 Express
 * directory buckets, access-point ARNs).
 */
export function baseUrlFrom(sent: SentRequest, bucket: string, fullKey: string): string | null {
  if (bucket.includes(":") || bucket.endsWith("--x-s3")) return null;
  const tail = keyPath(fullKey);
  if (!sent.path.endsWith(tail)) return null;
  const port = sent.port === undefined ? "" : `:${sent.port}`;
  return `${sent.protocol}//${sent.hostname}${port}${sent.path.slice(0, -tail.length)}`;
}

/** `/` and the key, each segment escaped as the SDK escapes it for the path it signs. */
function keyPath(fullKey: string): string {
  return `/${fullKey.split("/").map(escapeSegment).join("/")}`;
}

/** As the SDK escapes a key's segments for the path it signs (RFC 3986, `!'()*` included). */
function escapeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function retryable(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Shaped like the SDK's service errors, so S3Store words both the same way. */
function s3Error(status: number, body: string): Error {
  const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(body)?.[1] ?? awsErrorDetail(body);
  const err = new Error(message) as Error & {
    $metadata: { httpStatusCode: number };
  };
  err.name = code ?? `HTTP${status}`;
  err.$metadata = { httpStatusCode: status };
  return err;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

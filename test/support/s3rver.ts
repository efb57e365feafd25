/**
 * A real S3-compatible server for tests: s3rver on 127.0.0.1, ephemeral port, in a temp dir.
 *
 * Stable API (other suites use it):
 *   const s3 = await startS3rver();            // or startS3rver({ bucket, conditionalWrites })
 *   s3.endpoint  "http://127.0.0.1:PORT"       s3.bucket  the bucket, already created
 *   s3.client    S3Client (path style, credentials "S3RVER"/"S3RVER", us-east-1,
 *                checksums only when required)
 *   s3.env       the AWS_* variables that point `s3ClientFromEnv()` (or a child process) here
 *   await s3.stop()                            // closes the server, removes the temp dir
 *
 * Three s3rver 3.7 gaps are filled here, everything else is s3rver itself:
 * - ListObjectsV2 is answered by the helper: s3rver's continuation tokens use DES, which
 *   OpenSSL 3 (Node >= 17) no longer has, so its second page is a 500; and its pages follow
 *   directory-walk order, not key byte order. (List requests' signatures are not checked.)
 * - s3rver 3.7 predates S3 conditional writes and silently ignores `If-None-Match` on PUT.
 * `conditionalWrites` picks how the server behaves for such a PUT:
 *   "supported" (default): like AWS S3, R2 and MinIO, 412 PreconditionFailed if the key exists
 *     (checked and written under a per-key lock, so it is atomic);
 *   "not-implemented": 501 NotImplemented, as some older compatible servers answer;
 *   "ignored": s3rver's own behaviour (the header is ignored and the PUT overwrites).
 * - s3rver's putObject answers once its hashing stream has seen the body, while the object's file
 *   is still being opened and written (a write stream it never waits for): on a busy machine a
 *   request right after the 200 can find no object, or part of it. A CI run saw two conditional
 *   PUTs of one key both win. The helper's putObject writes the file and waits for it.
 * Set S3RVER_DEBUG=1 to see s3rver's request log.
 */
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";

export interface StartS3rverOptions {
  bucket?: string;
  conditionalWrites?: "supported" | "not-implemented" | "ignored";
}

export interface RunningS3rver {
  endpoint: string;
  bucket: string;
  client: S3Client;
  env: Record<string, string>;
  stop(): Promise<void>;
}

interface KoaContext {
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  req: AsyncIterable<unknown>;
  body: unknown;
}
interface StoredObject {
  key: string;
  lastModifiedDate: Date;
  metadata: Record<string, string>;
  size: number;
}
/** s3rver's S3Object as its store receives it: the body a Buffer or the request stream. */
interface S3rverObject {
  bucket: string;
  key: string;
  content: Buffer | AsyncIterable<unknown>;
  metadata: Record<string, string>;
}
type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;
interface S3rverInstance {
  middleware: Middleware[];
  store: {
    putObject(object: S3rverObject): Promise<{ size: number; md5: string }>;
    putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
    getResourcePath(bucket: string, key: string, resource: string): string;
    existsObject(bucket: string, key: string): Promise<boolean>;
    getBucket(bucket: string): Promise<unknown>;
    listObjects(
      bucket: string,
      options: { prefix?: string; maxKeys?: number },
    ): Promise<{ objects: StoredObject[]; isTruncated: boolean }>;
  };
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3ErrorClass = new (code: string, message?: string, detail?: Record<string, string>) => Error;

const require = createRequire(import.meta.url);

export async function startS3rver(opts: StartS3rverOptions = {}): Promise<RunningS3rver> {
  const S3rver = require("s3rver") as new (options: object) => S3rverInstance;
  const S3Error = require("s3rver/lib/models/error.js") as S3ErrorClass;
  const bucket = opts.bucket ?? "polar-test";
  const directory = await mkdtemp(join(tmpdir(), "polar-s3rver-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: process.env.S3RVER_DEBUG !== "1",
    directory,
    configureBuckets: [{ name: bucket }],
    vhostBuckets: false,
  });
  // Koa composes its middleware at listen time. These go just before s3rver's router (the last
  // one), i.e. after its XML encoder, so a plain-object body is still rendered as XML.
  server.middleware.splice(
    server.middleware.length - 1,
    0,
    conditionalPut(opts.conditionalWrites ?? "supported", server, S3Error),
    listObjectsV2(server, S3Error),
  );
  server.store.putObject = writtenBeforeAnswer(server.store);
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  return {
    endpoint,
    bucket,
    client,
    env: {
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    },
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** s3rver's putObject, but the object's bytes are on disk before it returns (then its metadata, as s3rver). */
function writtenBeforeAnswer(store: S3rverInstance["store"]): S3rverInstance["store"]["putObject"] {
  return async (object) => {
    const chunks: Buffer[] = [];
    if (Buffer.isBuffer(object.content)) chunks.push(object.content);
    else for await (const chunk of object.content) chunks.push(Buffer.from(chunk as Uint8Array));
    const bytes = Buffer.concat(chunks);
    const path = store.getResourcePath(object.bucket, object.key, "object");
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
    const md5 = createHash("md5").update(bytes).digest("hex");
    await store.putMetadata(object.bucket, object.key, object.metadata, md5);
    return { size: bytes.length, md5 };
  };
}

function conditionalPut(
  mode: NonNullable<StartS3rverOptions["conditionalWrites"]>,
  server: S3rverInstance,
  S3Error: S3ErrorClass,
): Middleware {
  const locks = new Map<string, Promise<void>>();
  return async (ctx, next) => {
    // The SDK adds `?x-id=PutObject`; any other query parameter is a sub-resource (acl, tagging, part).
    const isPlainPut = ctx.method === "PUT" && Object.keys(ctx.query).every((name) => name === "x-id");
    if (mode === "ignored" || !isPlainPut || ctx.headers["if-none-match"] !== "*") return next();
    const [bucket, ...rest] = ctx.path.slice(1).split("/");
    const key = decodeURIComponent(rest.join("/"));
    if (mode === "not-implemented") {
      await drain(ctx.req);
      throw new S3Error(
        "NotImplemented",
        "A header you provided implies functionality that is not implemented",
        {
          Header: "If-None-Match",
        },
      );
    }
    const lockKey = `${bucket}/${key}`;
    const previous = locks.get(lockKey) ?? Promise.resolve();
    let release = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const chained = previous.then(() => mine);
    locks.set(lockKey, chained);
    await previous;
    try {
      if (await server.store.existsObject(bucket, key)) {
        await drain(ctx.req);
        throw new S3Error(
          "PreconditionFailed",
          "At least one of the pre-conditions you specified did not hold",
          {
            Condition: "If-None-Match",
          },
        );
      }
      await next();
    } finally {
      release();
      if (locks.get(lockKey) === chained) locks.delete(lockKey);
    }
  };
}

function listObjectsV2(server: S3rverInstance, S3Error: S3ErrorClass): Middleware {
  return async (ctx, next) => {
    const bucketPath = ctx.path.replace(/^\/|\/$/g, "");
    if (
      ctx.method !== "GET" ||
      bucketPath === "" ||
      bucketPath.includes("/") ||
      ctx.query["list-type"] !== "2"
    ) {
      return next();
    }
    const bucket = decodeURIComponent(bucketPath);
    if (!(await server.store.getBucket(bucket))) {
      throw new S3Error("NoSuchBucket", "The specified bucket does not exist", { BucketName: bucket });
    }
    const prefix = ctx.query.prefix ?? "";
    const delimiter = ctx.query.delimiter || undefined;
    const maxKeys = Math.min(1000, Number(ctx.query["max-keys"] ?? 1000));
    const token = ctx.query["continuation-token"];
    const startAfter = token
      ? Buffer.from(token, "base64url").toString("utf8")
      : (ctx.query["start-after"] ?? "");
    const { objects } = await server.store.listObjects(bucket, { prefix });
    const byKey = new Map<string, StoredObject>();
    const entries = new Set<string>();
    for (const object of objects) {
      const rest = object.key.slice(prefix.length);
      const cut = delimiter ? rest.indexOf(delimiter) : -1;
      if (cut === -1) {
        byKey.set(object.key, object);
        entries.add(object.key);
      } else {
        entries.add(prefix + rest.slice(0, cut + (delimiter?.length ?? 0)));
      }
    }
    const sorted = [...entries]
      .filter((entry) => entry > startAfter)
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const page = sorted.slice(0, maxKeys);
    const truncated = sorted.length > page.length;
    ctx.body = {
      ListBucketResult: {
        "@": { xmlns: "http://s3.amazonaws.com/doc/2006-03-01/" },
        Name: bucket,
        Prefix: prefix,
        StartAfter: token ? undefined : ctx.query["start-after"],
        ContinuationToken: token,
        NextContinuationToken: truncated
          ? Buffer.from(page[page.length - 1]).toString("base64url")
          : undefined,
        KeyCount: page.length,
        MaxKeys: maxKeys,
        Delimiter: delimiter,
        IsTruncated: truncated,
        Contents: page
          .filter((entry) => byKey.has(entry))
          .map((key) => {
            const object = byKey.get(key) as StoredObject;
            return {
              Key: key,
              LastModified: object.lastModifiedDate.toISOString(),
              ETag: object.metadata.etag,
              Size: object.size,
              StorageClass: "STANDARD",
            };
          }),
        CommonPrefixes: page.filter((entry) => !byKey.has(entry)).map((entry) => ({ Prefix: entry })),
      },
    };
  };
}

async function drain(body: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of body) {
    // discard: answering before the body is read would break the keep-alive connection
  }
}

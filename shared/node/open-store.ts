import { fileURLToPath } from "node:url";
import { MemoryStore } from "../store/memory-store.ts";
import type { ObjectStore, PutOptions } from "../store/object-store.ts";
import type { S3Store } from "../store/s3-store.ts";
import { assertStoreKey } from "../store/store-key.ts";
import { DirectoryStore } from "./directory-store.ts";

/** The embedded store used when no `--store` is given, relative to the working directory. */
export const DEFAULT_STORE_DIR = ".polar/store";

/**
 * The store a `--store` value names:
 *   (none)                 DirectoryStore at `.polar/store`
 *   DIR | file:///abs/dir  DirectoryStore
 *   s3://bucket[/prefix]   S3Store; client from the AWS_* variables (`s3ClientFromEnv`); the
 *                          AWS SDK (~0.5 s to load) is loaded on first use, not here
 *   memory://              MemoryStore (this process only; for tests and one-process runs)
 * Throws `StoreSpecError` saying which forms exist for anything else.
 */
export function openStore(
  spec: string | undefined,
  env: Record<string, string | undefined> = process.env,
): ObjectStore {
  if (spec === undefined || spec.trim() === "") return new DirectoryStore(DEFAULT_STORE_DIR);
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(spec)?.[1]?.toLowerCase();
  if (scheme === undefined || /^[a-zA-Z]:[\\/]/.test(spec)) return new DirectoryStore(spec);
  switch (scheme) {
    case "file":
      try {
        return new DirectoryStore(fileURLToPath(spec));
      } catch (err) {
        throw new StoreSpecError(
          `--store ${spec}: not a usable file URL (${(err as Error).message}); use file:///absolute/path`,
        );
      }
    case "s3": {
      const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(spec);
      if (!match) throw new StoreSpecError(`--store ${spec}: expected s3://bucket or s3://bucket/prefix`);
      return new LazyS3Store(match[1], match[2], env);
    }
    case "memory":
      return new MemoryStore();
    default:
      throw new StoreSpecError(
        `--store ${spec}: unknown scheme "${scheme}:"; expected a directory, file:///dir, s3://bucket/prefix or memory:// ` +
          "(for R2 from Node, use s3:// with AWS_ENDPOINT_URL_S3 set to the account's R2 endpoint)",
      );
  }
}

export class StoreSpecError extends Error {}

/** An S3Store whose module (and the AWS SDK behind it) is imported by the first call. */
class LazyS3Store implements ObjectStore {
  readonly url: string;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly env: Record<string, string | undefined>;
  private loading?: Promise<S3Store>;
  private loaded?: S3Store;

  constructor(bucket: string, prefix: string, env: Record<string, string | undefined>) {
    this.bucket = bucket;
    this.prefix = prefix;
    this.env = env;
    const folder = prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`;
    if (folder !== "") assertStoreKey(folder, "prefix");
    this.url = `s3://${bucket}/${folder}`;
  }

  get capabilities(): { atomicPutIfAbsent: boolean } {
    return this.loaded?.capabilities ?? { atomicPutIfAbsent: true };
  }

  put(key: string, body: Uint8Array | string, opts?: PutOptions) {
    return this.open().then((s) => s.put(key, body, opts));
  }
  putIfAbsent(key: string, body: Uint8Array | string, opts?: PutOptions) {
    return this.open().then((s) => s.putIfAbsent(key, body, opts));
  }
  get(key: string) {
    return this.open().then((s) => s.get(key));
  }
  list(prefix: string) {
    return this.open().then((s) => s.list(prefix));
  }
  delete(key: string) {
    return this.open().then((s) => s.delete(key));
  }

  private open(): Promise<S3Store> {
    this.loading ??= Promise.all([import("../store/s3-store.ts"), import("./s3-put-transport.ts")]).then(
      ([{ S3Store, s3ClientFromEnv }, { undiciPutTransport }]) => {
        this.loaded = new S3Store({
          bucket: this.bucket,
          prefix: this.prefix,
          client: s3ClientFromEnv(this.env),
          putTransport: undiciPutTransport(),
        });
        return this.loaded;
      },
    );
    return this.loading;
  }
}

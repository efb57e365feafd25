/**
 * The one storage interface every part uses. Keys follow `shared/keys.ts`.
 * Backends: S3 API (`s3-store.ts`) and R2 binding (`r2-store.ts`) here; the directory backend is
 * Node-only and lives in `shared/node/directory-store.ts` (the Worker never imports `shared/node/`).
 */
export interface ObjectStore {
  put(key: string, body: Uint8Array | string, opts?: PutOptions): Promise<void>;
  /**
   * Writes only if no object exists at `key`. Returns false if one did.
   * Backends that cannot do this atomically say so in `capabilities.atomicPutIfAbsent`.
   */
  putIfAbsent(key: string, body: Uint8Array | string, opts?: PutOptions): Promise<boolean>;
  /** null when the key does not exist. */
  get(key: string): Promise<Uint8Array | null>;
  /** Keys under `prefix`, in ascending byte order, across all pages. */
  list(prefix: string): Promise<string[]>;
  /** No error if the key does not exist. */
  delete(key: string): Promise<void>;
  readonly capabilities: { atomicPutIfAbsent: boolean };
  /** Human-readable location, e.g. `file:///data` or `s3://bucket/prefix`. */
  readonly url: string;
}

export interface PutOptions {
  contentType?: string;
  contentEncoding?: string;
}

import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { open, readdir, readFile, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { compareBytes } from "../store/memory-store.ts";
import type { ObjectStore, PutOptions } from "../store/object-store.ts";
import { assertStoreKey, InvalidStoreKeyError } from "../store/store-key.ts";

/**
 * The embedded store: one file per key under a root directory (Node only).
 * Writes go to a temp file in the target directory and are renamed into place, so a reader
 * never sees a half-written object, even if the writer dies mid-write.
 * A key cannot be both an object and a prefix of other keys ("a" and "a/b"): a filesystem
 * cannot hold a file and a directory under one name. The storage layout never does that.
 */
export class DirectoryStore implements ObjectStore {
  readonly capabilities = { atomicPutIfAbsent: true };
  readonly url: string;
  readonly root: string;
  private readonly madeDirs = new Set<string>();

  constructor(root: string) {
    this.root = resolve(root);
    this.url = pathToFileURL(this.root).href;
  }

  async put(key: string, body: Uint8Array | string, _opts?: PutOptions): Promise<void> {
    const path = this.pathOf(key);
    const temp = this.writeTemp(path, key, body);
    try {
      renameSync(temp, path);
    } catch (err) {
      removeQuietly(temp);
      throw this.explain(err, key);
    }
  }

  async putIfAbsent(key: string, body: Uint8Array | string, _opts?: PutOptions): Promise<boolean> {
    const path = this.pathOf(key);
    const temp = this.writeTemp(path, key, body);
    try {
      // link() fails with EEXIST instead of replacing, and publishes the complete file at once.
      linkSync(temp, path);
      return true;
    } catch (err) {
      if (code(err) === "EEXIST") {
        // A directory there means the key is a prefix of other keys, not an existing object.
        if ((await stat(path).catch(() => null))?.isDirectory()) throw this.explain(err, key);
        return false;
      }
      if (!LINK_UNSUPPORTED.has(code(err) ?? "")) throw this.explain(err, key);
      return await this.createExclusive(path, key, body);
    } finally {
      removeQuietly(temp);
    }
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      const data = await readFile(this.pathOf(key));
      return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    } catch (err) {
      // A directory at the path is a prefix of other keys, not an object.
      if (MISSING.has(code(err) ?? "")) return null;
      throw this.explain(err, key);
    }
  }

  async list(prefix: string): Promise<string[]> {
    checkKey(prefix, "prefix");
    const base = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/") + 1) : "";
    const out: string[] = [];
    await this.walk(base, prefix, out);
    return out.sort(compareBytes);
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathOf(key));
    } catch (err) {
      // Nothing there, or a directory (the key is only a prefix of other keys): nothing to delete.
      if (MISSING.has(code(err) ?? "")) return;
      throw this.explain(err, key);
    }
  }

  private pathOf(key: string): string {
    checkKey(key, "key");
    return join(this.root, ...key.split("/"));
  }

  /**
   * Writes synchronously on purpose: on a quiet ext4 disk a 32 KB capture costs ~0.04 ms CPU as
   * open/write/close/rename on the main thread, against 0.07-0.24 ms through the thread pool,
   * where each call is a hop with its futex wake-ups (bench/support/directory-store-put.ts). The
   * event loop waits as long as the disk does; a store on a slow network mount wants S3 instead.
   */
  private writeTemp(path: string, key: string, body: Uint8Array | string): string {
    const dir = dirname(path);
    const temp = join(dir, `${TEMP_MARK}${randomBytes(8).toString("hex")}`);
    try {
      this.ensureDir(dir);
      try {
        writeFileSync(temp, body);
      } catch (err) {
        // The directory may have been removed since it was remembered: make it again, once.
        if (code(err) !== "ENOENT") throw err;
        this.madeDirs.delete(dir);
        this.ensureDir(dir);
        writeFileSync(temp, body);
      }
    } catch (err) {
      removeQuietly(temp);
      throw this.explain(err, key);
    }
    return temp;
  }

  /**
   * `mkdir -p` once per directory: every capture of a session lands in the same directory, and a
   * recursive mkdir is a stat walk per put otherwise.
   */
  private ensureDir(dir: string): void {
    if (this.madeDirs.has(dir)) return;
    mkdirSync(dir, { recursive: true });
    // Bounded: a long-running proxy sees many sessions; forgetting one only costs a mkdir.
    if (this.madeDirs.size >= MADE_DIRS_MAX) this.madeDirs.clear();
    this.madeDirs.add(dir);
  }

  /** Fallback where hard links are unsupported: exclusive create, then write (not crash-atomic). */
  private async createExclusive(path: string, key: string, body: Uint8Array | string): Promise<boolean> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, "wx");
    } catch (err) {
      if (code(err) === "EEXIST") return false;
      throw this.explain(err, key);
    }
    try {
      await handle.writeFile(body);
    } finally {
      await handle.close();
    }
    return true;
  }

  private async walk(dirKey: string, prefix: string, out: string[]): Promise<void> {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(join(this.root, ...dirKey.split("/").filter(Boolean)), { withFileTypes: true });
    } catch (err) {
      if (MISSING.has(code(err) ?? "")) return;
      throw err;
    }
    for (const entry of entries) {
      if (entry.name.startsWith(TEMP_MARK)) continue;
      const key = dirKey + entry.name;
      if (entry.isDirectory()) {
        const sub = `${key}/`;
        // Descend only where keys under `sub` can still start with `prefix`.
        if (sub.startsWith(prefix) || prefix.startsWith(sub)) await this.walk(sub, prefix, out);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        out.push(key);
      }
    }
  }

  private explain(err: unknown, key: string): Error {
    const c = code(err);
    if (c === "ENOTDIR" || c === "EISDIR" || c === "EEXIST") {
      return new DirectoryStoreError(
        `key ${JSON.stringify(key)} conflicts with an existing key in ${this.root}: a key cannot be both an object and a prefix of other keys (${c})`,
      );
    }
    return err instanceof Error ? err : new Error(String(err));
  }
}

export class DirectoryStoreError extends Error {}

/** Names starting with this are in-flight writes; keys may not contain such a segment. */
const TEMP_MARK = ".polar-tmp-";
const MADE_DIRS_MAX = 4096;
const MISSING = new Set(["ENOENT", "ENOTDIR", "EISDIR"]);
const LINK_UNSUPPORTED = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV"]);

/** The shared key rules, plus the temp-file names this backend reserves. */
function checkKey(key: string, what: "key" | "prefix"): void {
  assertStoreKey(key, what);
  if (key.split("/").some((segment) => segment.startsWith(TEMP_MARK))) {
    throw new InvalidStoreKeyError(
      `${what} ${JSON.stringify(key)}: segments starting with "${TEMP_MARK}" are reserved`,
    );
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone, or never created
  }
}

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

import { randomBytes } from "node:crypto";
import { link, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
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

  constructor(root: string) {
    this.root = resolve(root);
    this.url = pathToFileURL(this.root).href;
  }

  async put(key: string, body: Uint8Array | string, _opts?: PutOptions): Promise<void> {
    const path = this.pathOf(key);
    const temp = await this.writeTemp(path, key, body);
    try {
      await rename(temp, path);
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw this.explain(err, key);
    }
  }

  async putIfAbsent(key: string, body: Uint8Array | string, _opts?: PutOptions): Promise<boolean> {
    const path = this.pathOf(key);
    const temp = await this.writeTemp(path, key, body);
    try {
      // link() fails with EEXIST instead of replacing, and publishes the complete file at once.
      await link(temp, path);
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
      await unlink(temp).catch(() => {});
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

  private async writeTemp(path: string, key: string, body: Uint8Array | string): Promise<string> {
    const dir = dirname(path);
    const temp = join(dir, `${TEMP_MARK}${randomBytes(8).toString("hex")}`);
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(temp, body);
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw this.explain(err, key);
    }
    return temp;
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

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

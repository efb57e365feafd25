import { constants } from "node:fs";
import { lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { storeKeyProblem } from "../../shared/store/store-key.ts";

/**
 * Everything one session's attempt keeps (every step's artifacts, the task's and the preset's at
 * the end): a runaway harness log must not fill the store. Past this, the rest is skipped and said so.
 */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
/** One file's cap: a single huge file is skipped rather than read into memory. */
export const MAX_ARTIFACT_FILE_BYTES = 32 * 1024 * 1024;

/**
 * The bytes a session's attempt may still keep, shared by each `keepArtifacts` of it (issue 49:
 * each call had its own 64 MiB, so 8 steps keeping the same two 30 MB files kept 516 MB).
 */
export class ArtifactBudget {
  used = 0;
  readonly total: number;
  constructor(total = MAX_ARTIFACT_BYTES) {
    this.total = total;
  }
  get left(): number {
    return this.total - this.used;
  }
}

export interface KeptArtifacts {
  keys: string[];
  skipped: string[];
}

/**
 * Copies a preset's artifacts (paths under the session HOME, e.g. Codex `sessions/`) to
 * `artifacts/{task}/{session}/{attempt}/{path}` before the runtime is torn down.
 * A missing path is not an error: a harness that crashed early leaves none.
 *
 * The agent owns HOME, so nothing here follows a link: each path component is lstat'ed, files are
 * opened with O_NOFOLLOW and must still be inside HOME once open; a symlink is skipped and reported.
 */
export async function keepArtifacts(opts: {
  store: ObjectStore;
  taskId: string;
  sessionId: string;
  attempt: number;
  /** The dir `paths` are under: the session HOME (a preset's artifacts) or its work dir (a task's). */
  homeDir: string;
  paths: string[];
  /** Under the attempt's prefix (`workdir/`: a task's artifacts, kept from its work dir). */
  keyPrefix?: string;
  /** The session's: what this call keeps is taken from what its earlier calls left. */
  budget: ArtifactBudget;
  maxFileBytes?: number;
}): Promise<KeptArtifacts> {
  const budget = opts.budget;
  const fileCap = opts.maxFileBytes ?? MAX_ARTIFACT_FILE_BYTES;
  const prefix = keys.artifactsOfAttempt(opts.taskId, opts.sessionId, opts.attempt) + (opts.keyPrefix ?? "");
  const home = await realpath(opts.homeDir);
  const kept: KeptArtifacts = { keys: [], skipped: [] };
  for (const path of opts.paths) {
    const files = await filesUnder(home, path, kept.skipped);
    for (const file of files) {
      const rel = relative(home, file).split(sep).join("/");
      if (storeKeyProblem(rel) !== null || rel.startsWith("../")) {
        kept.skipped.push(`${rel}: not a storable path`);
        continue;
      }
      const read = await readInside(home, file, fileCap, budget.left, budget.total);
      if (typeof read === "string") {
        kept.skipped.push(`${rel}: ${read}`);
        continue;
      }
      budget.used += read.byteLength;
      const key = prefix + rel;
      await opts.store.put(key, read);
      kept.keys.push(key);
    }
  }
  return kept;
}

/** Regular files at or under HOME/path, reached without following any symlink. */
async function filesUnder(home: string, path: string, skipped: string[]): Promise<string[]> {
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) {
    skipped.push(`${path}: not a path under HOME`);
    return [];
  }
  let current = home;
  let info: Awaited<ReturnType<typeof lstat>> | null = null;
  for (const part of parts) {
    current = join(current, part);
    info = await lstat(current).catch(() => null);
    if (!info) return [];
    if (info.isSymbolicLink()) {
      skipped.push(await symlinkReport(home, current));
      return [];
    }
  }
  if (!info || info.isFile()) return info ? [current] : [];
  if (!info.isDirectory()) return [];
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const full = join(dir, e.name);
      if (e.isSymbolicLink()) skipped.push(await symlinkReport(home, full));
      else if (e.isDirectory()) await walk(full);
      else if (e.isFile()) out.push(full);
    }
  };
  await walk(current);
  return out;
}

async function symlinkReport(home: string, link: string): Promise<string> {
  const rel = relative(home, link).split(sep).join("/");
  const target = await readlink(link).catch(() => "?");
  const resolved = await realpath(link).catch(() => null);
  const leaves = resolved === null || !(resolved === home || resolved.startsWith(`${home}/`));
  return leaves
    ? `${rel}: a symlink leaving the session (to ${target}), not followed`
    : `${rel}: a symlink, not followed`;
}

/** The file's bytes, or why it was not read: opened without following links, checked once open. */
async function readInside(
  home: string,
  file: string,
  fileCap: number,
  left: number,
  budget: number,
): Promise<Uint8Array | string> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return `not read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return "not a regular file";
    // A directory swapped for a link between the walk and the open would put the file elsewhere.
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => file);
    if (!real.startsWith(`${home}/`)) return "resolved outside the session, not read";
    if (info.size > fileCap) return `over the ${fileCap}-byte per-file cap (${info.size} bytes)`;
    if (info.size > left) return `over the session's ${budget}-byte artifact budget (${left} bytes left)`;
    const buf = Buffer.alloc(info.size);
    const { bytesRead } = await handle.read(buf, 0, info.size, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

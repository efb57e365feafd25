import { readdir, readFile, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { storeKeyProblem } from "../../shared/store/store-key.ts";

/** A runaway harness log must not fill the store: past this, the rest is skipped and said so. */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;

export interface KeptArtifacts {
  keys: string[];
  skipped: string[];
}

/**
 * Copies a preset's artifacts (paths under the session HOME, e.g. Codex `sessions/`) to
 * `artifacts/{task}/{session}/{attempt}/{path}` before the runtime is torn down.
 * A missing path is not an error: a harness that crashed early leaves none.
 */
export async function keepArtifacts(opts: {
  store: ObjectStore;
  taskId: string;
  sessionId: string;
  attempt: number;
  homeDir: string;
  paths: string[];
  maxBytes?: number;
}): Promise<KeptArtifacts> {
  const budget = opts.maxBytes ?? MAX_ARTIFACT_BYTES;
  const prefix = keys.artifactsOfAttempt(opts.taskId, opts.sessionId, opts.attempt);
  const kept: KeptArtifacts = { keys: [], skipped: [] };
  let used = 0;
  for (const path of opts.paths) {
    for (const file of await filesUnder(join(opts.homeDir, path))) {
      const rel = relative(opts.homeDir, file).split(sep).join("/");
      const size = (await stat(file)).size;
      if (storeKeyProblem(rel) !== null || rel.startsWith("../")) {
        kept.skipped.push(`${rel}: not a storable path`);
        continue;
      }
      if (used + size > budget) {
        kept.skipped.push(`${rel}: over the ${budget}-byte artifact budget`);
        continue;
      }
      used += size;
      const key = prefix + rel;
      await opts.store.put(key, await readFile(file));
      kept.keys.push(key);
    }
  }
  return kept;
}

async function filesUnder(path: string): Promise<string[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch {
    return [];
  }
  if (info.isFile()) return [path];
  if (!info.isDirectory()) return [];
  const entries = await readdir(path, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

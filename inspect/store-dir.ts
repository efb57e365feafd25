import { existsSync } from "node:fs";
import { join } from "node:path";

/** Top-level folders of a store (shared/keys.ts). */
const STORE_FOLDERS = ["results", "captures", "trajectories", "tasks"];

/**
 * The store a local path names: the path itself, or `PATH/store` when PATH is a `polar run --out`
 * directory (which holds the store one level down). s3:// and file:// specs pass through.
 */
export function resolveStoreSpec(spec: string): string {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(spec)) return spec;
  const isStore = (dir: string) => STORE_FOLDERS.some((f) => existsSync(join(dir, f)));
  if (!isStore(spec) && isStore(join(spec, "store"))) return join(spec, "store");
  return spec;
}

/** Where `polar run` puts its store without `--out`, then the embedded default. */
export const DEFAULT_VIEW_STORES = [".polar/run/store", ".polar/store"];

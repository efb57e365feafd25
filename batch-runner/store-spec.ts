import { DirectoryStore } from "../shared/node/directory-store.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";

/**
 * Opens `--store DIR|file://...|s3://bucket/prefix` through shared/node/open-store.ts (the store
 * backends' own entry point), loaded lazily so `polar --help` does not load the AWS SDK.
 */
export async function openStoreSpec(spec: string): Promise<ObjectStore> {
  // A variable specifier: the store module is another part's, typed here by what this file uses.
  const specifier = "../shared/node/open-store.ts";
  try {
    const mod = (await import(specifier)) as { openStore(spec: string): ObjectStore | Promise<ObjectStore> };
    return await mod.openStore(spec);
  } catch (err) {
    const missing = (err as { code?: string }).code === "ERR_MODULE_NOT_FOUND" && String(err).includes("open-store");
    if (!missing || /^s3:\/\//.test(spec)) throw err;
    return new DirectoryStore(spec.startsWith("file://") ? new URL(spec).pathname : spec);
  }
}

import type { ObjectStore } from "../../shared/store/object-store.ts";

/**
 * Images this process already stored, per store: a screenshot re-sent on every call is uploaded
 * once and charged to its session once, not checked again each time. Bounded; forgetting one only
 * costs a `putIfAbsent` (and, for the session budget, counting it again).
 */
const BLOBS_REMEMBERED = 4096;
const knownBlobs = new WeakMap<ObjectStore, Set<string>>();

function setOf(store: ObjectStore): Set<string> {
  let set = knownBlobs.get(store);
  if (!set) {
    set = new Set<string>();
    knownBlobs.set(store, set);
  }
  return set;
}

export function isKnownBlob(store: ObjectStore, sha256: string): boolean {
  return setOf(store).has(sha256);
}

export function rememberBlob(store: ObjectStore, sha256: string): void {
  const set = setOf(store);
  if (set.size >= BLOBS_REMEMBERED) set.delete(set.values().next().value as string);
  set.add(sha256);
}

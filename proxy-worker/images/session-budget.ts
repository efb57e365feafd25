import { z } from "zod";
import { sha256Hex } from "../../shared/images/image-refs.ts";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import type { SessionIdentity } from "../auth.ts";
import { isKnownBlob } from "./known-blobs.ts";

export interface SessionImageCaps {
  /** New image objects one session attempt may add to the store (`Limits.maxSessionImages`). */
  maxSessionImages: number;
  /** Their bytes (`Limits.maxSessionImageBytes`). */
  maxSessionImageBytes: number;
}

const Ledger = z.strictObject({
  v: z.literal(1),
  images: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});
type Ledger = z.infer<typeof Ledger>;

/** The ledger holds what the proxy wrote, or nothing: anything else is the store's fault, not the caller's. */
export class ImageBudgetStoreError extends Error {}

/**
 * Charges a call's images the store does not hold yet (as far as this process knows) to its
 * session's budget before the engine sees the call, and returns null; or returns the refusal
 * (naming the cap) when they would take the session over it, charging nothing.
 *
 * The count is kept in the store (`keys.imageBudget`, one small JSON object per session attempt),
 * so it holds across processes and Worker isolates: the proxy keeps no state a restart loses.
 * Calls of one session are charged one at a time in this process; two processes charging the same
 * session at once can each read the old count and one charge is lost, so across N processes
 * serving one session at the same moment the bound is N times the cap (one process: exact). A
 * charge is never given back: an image of a call that then fails counts though it is not stored.
 */
export async function chargeSessionImages(
  store: ObjectStore,
  identity: SessionIdentity,
  images: readonly Uint8Array[],
  caps: SessionImageCaps,
): Promise<string | null> {
  const fresh = new Map<string, number>();
  for (const bytes of images) {
    const sha = await sha256Hex(bytes);
    if (!isKnownBlob(store, sha)) fresh.set(sha, bytes.byteLength);
  }
  if (fresh.size === 0) return null;
  const key = keys.imageBudget(identity.taskId, identity.sessionId, identity.attempt);
  let added = 0;
  for (const n of fresh.values()) added += n;
  return oneAtATime(key, async () => {
    const used = await readLedger(store, key);
    const next: Ledger = { v: 1, images: used.images + fresh.size, bytes: used.bytes + added };
    const who = `session ${identity.sessionId}`;
    if (next.images > caps.maxSessionImages)
      return `${who} would store ${next.images} images, over this proxy's cap of ${caps.maxSessionImages} images per session (--max-session-images); it has stored ${used.images}`;
    if (next.bytes > caps.maxSessionImageBytes)
      return `${who} would store ${mib(next.bytes)} of images, over this proxy's cap of ${mib(caps.maxSessionImageBytes)} per session (--max-session-image-mb); it has stored ${mib(used.bytes)}`;
    await store.put(key, JSON.stringify(next), { contentType: "application/json" });
    return null;
  });
}

async function readLedger(store: ObjectStore, key: string): Promise<Ledger> {
  const bytes = await store.get(key);
  if (bytes === null) return { v: 1, images: 0, bytes: 0 };
  try {
    return Ledger.parse(JSON.parse(new TextDecoder().decode(bytes)));
  } catch (err) {
    throw new ImageBudgetStoreError(`${key} is not an image budget ledger: ${(err as Error).message}`);
  }
}

const queues = new Map<string, Promise<unknown>>();

/** Runs `f` after every earlier call for `key` in this process has settled. */
function oneAtATime<T>(key: string, f: () => Promise<T>): Promise<T> {
  const run = (queues.get(key) ?? Promise.resolve()).then(f, f);
  const tail = run.catch(() => {});
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return run;
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(2)} MiB`;
}

import { monotonicFactory } from "ulid";

/**
 * Ids become storage key segments, so they must not be able to escape their prefix:
 * no `/`, no `..` (a leading dot is impossible), no control characters.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export function isValidId(id: string): boolean {
  return ID_PATTERN.test(id) && !id.includes("..");
}

export function assertValidId(id: string, what = "id"): string {
  if (!isValidId(id)) {
    throw new InvalidIdError(
      `${what} ${JSON.stringify(id)} is not a valid id: expected ${ID_PATTERN.source} without ".."`,
    );
  }
  return id;
}

export class InvalidIdError extends Error {}

// Monotonic so that ids minted in the same millisecond still sort in call order
// (capture keys must list in call order). The library's default PRNG makes one
// crypto.getRandomValues call per character (16 per id, ~0.15 ms on the proxy's hot path);
// this one draws the same CSPRNG bytes, a buffer at a time.
const randomBytes = new Uint8Array(4096);
let randomAt = randomBytes.length;
function bufferedRandom(): number {
  if (randomAt === randomBytes.length) {
    crypto.getRandomValues(randomBytes);
    randomAt = 0;
  }
  return randomBytes[randomAt++] / 256;
}
const nextUlid = monotonicFactory(bufferedRandom);

export function newUlid(now: number = Date.now()): string {
  return nextUlid(now);
}

/** Plain code-unit order: ids are ASCII (ID_PATTERN), so this is byte order, as stores list keys. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Ids derived from a seed (usually the upstream chat id) instead of randomness, so that the same
 * upstream answer always encodes to the same provider answer: fixtures stay stable and a replayed
 * capture re-encodes byte for byte.
 */

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** 32-bit FNV-1a; four lanes with different bases give 128 bits. */
function fnv1a(text: string, basis: number): number {
  let hash = basis >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

const BASES = [0x811c9dc5, 0x050c5d1f, 0x1b873593, 0x6a09e667];

/** `prefix` + 22 base62 characters that depend only on the seed parts. */
export function derivedId(prefix: string, ...seed: (string | number)[]): string {
  const text = seed.join("\u0000");
  let value = 0n;
  for (const basis of BASES) value = (value << 32n) | BigInt(fnv1a(text, basis));
  let out = "";
  for (let i = 0; i < 22; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return prefix + out;
}

/**
 * Prefix hashes over token ids, so "is this chain's tip a prefix of that prompt?" costs O(1)
 * per open chain instead of O(tip length). Two independent 32-bit polynomial hashes make a
 * false hit vanishingly rare, and every hit is still confirmed by an exact compare.
 */
const B1 = 0x01000193; // FNV prime: odd, so multiplication is a bijection mod 2^32
const B2 = 0x5bd1e995; // MurmurHash2 multiplier

export interface PrefixHash {
  h1: number;
  h2: number;
}

export const EMPTY_HASH: PrefixHash = { h1: 0, h2: 0 };

/** `out1[i]`, `out2[i]` = hash of `ids[0..i)`, for i = 0..ids.length. */
export function prefixHashes(ids: readonly number[]): { h1: Int32Array; h2: Int32Array } {
  const n = ids.length;
  const h1 = new Int32Array(n + 1);
  const h2 = new Int32Array(n + 1);
  let a = 0;
  let b = 0;
  for (let i = 0; i < n; i++) {
    const t = ids[i];
    a = (Math.imul(a, B1) + t + 1) | 0;
    b = Math.imul(b ^ (t + 0x9e3779b9), B2) | 0;
    h1[i + 1] = a;
    h2[i + 1] = b;
  }
  return { h1, h2 };
}

/** The hash of `prefix ++ ids`, given the hash of `prefix`. */
export function extendHash(start: PrefixHash, ids: readonly number[]): PrefixHash {
  let a = start.h1;
  let b = start.h2;
  for (let i = 0; i < ids.length; i++) {
    const t = ids[i];
    a = (Math.imul(a, B1) + t + 1) | 0;
    b = Math.imul(b ^ (t + 0x9e3779b9), B2) | 0;
  }
  return { h1: a, h2: b };
}

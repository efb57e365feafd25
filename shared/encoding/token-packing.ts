import { z } from "zod";
import { base64ToBytes, bytesToBase64 } from "./base64.ts";

/**
 * Compact, tagged forms of token arrays for stored records. The tag names the byte layout so
 * the format can evolve: readers dispatch on `enc`, writers pick the smallest that fits.
 *
 * - `u18.b64x3`: each id is exactly 3 base64-alphabet digits (18 bits), most significant first,
 *   for vocabularies below 2^18 (Qwen3: 151,669). Same property as below (an id is a fixed-size
 *   group of characters, so repeated token runs are repeated strings for gzip), 25% less text,
 *   and every character carries 6 bits of the id. On 12,000 real prompt ids after gzip: 12.3 KB
 *   (u24le.b64: 13.4 KB); on pseudo-random ids 27 KB against 32 KB. Less text also means less
 *   for gzip to chew on the hot path.
 * - `u24le.b64`: 3 bytes per id, little-endian. Every id is exactly 4 base64 characters, so a
 *   token sequence that repeats (system prompt, tool schemas, earlier turns) is a repeated
 *   string that gzip matches. On 12,000 real prompt ids after base64 + gzip: 13.4 KB, against
 *   16.1 KB for LEB128 varints and 19.4 KB for Int32.
 * - `i32le.b64`: 4 bytes per id, for vocabularies with ids >= 2^24.
 * - `f32le.b64`: logprobs as little-endian float32 (values are rounded to float32 precision,
 *   which is what vLLM and SGLang compute them in).
 */
export const PackedTokenIds = z.object({
  enc: z.enum(["u18.b64x3", "u24le.b64", "i32le.b64"]),
  n: z.number().int().nonnegative(),
  data: z.string(),
});
export type PackedTokenIds = z.infer<typeof PackedTokenIds>;

export const PackedLogprobs = z.object({
  enc: z.literal("f32le.b64"),
  n: z.number().int().nonnegative(),
  data: z.string(),
});
export type PackedLogprobs = z.infer<typeof PackedLogprobs>;

const U18_LIMIT = 1 << 18;
const U24_LIMIT = 1 << 24;
const DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT_CODES = Uint8Array.from(DIGITS, (c) => c.charCodeAt(0));
/** Char code -> digit value, or -1 for a character outside the alphabet. */
const DIGIT_VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < DIGITS.length; i++) DIGIT_VALUES[DIGITS.charCodeAt(i)] = i;
const ascii = new TextDecoder();

export function packTokenIds(ids: readonly number[]): PackedTokenIds {
  let max = 0;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) {
      throw new TokenPackingError(`token id ${id} is not an integer in [0, 2^31)`);
    }
    if (id > max) max = id;
  }
  if (max < U18_LIMIT) {
    const chars = new Uint8Array(ids.length * 3);
    for (let i = 0, o = 0; i < ids.length; i++, o += 3) {
      const id = ids[i];
      chars[o] = DIGIT_CODES[id >>> 12];
      chars[o + 1] = DIGIT_CODES[(id >>> 6) & 63];
      chars[o + 2] = DIGIT_CODES[id & 63];
    }
    return { enc: "u18.b64x3", n: ids.length, data: ascii.decode(chars) };
  }
  if (max < U24_LIMIT) {
    const bytes = new Uint8Array(ids.length * 3);
    for (let i = 0, o = 0; i < ids.length; i++, o += 3) {
      const id = ids[i];
      bytes[o] = id & 0xff;
      bytes[o + 1] = (id >>> 8) & 0xff;
      bytes[o + 2] = id >>> 16;
    }
    return { enc: "u24le.b64", n: ids.length, data: bytesToBase64(bytes) };
  }
  const bytes = new Uint8Array(ids.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < ids.length; i++) view.setInt32(i * 4, ids[i], true);
  return { enc: "i32le.b64", n: ids.length, data: bytesToBase64(bytes) };
}

export function unpackTokenIds(packed: PackedTokenIds): number[] {
  if (packed.enc === "u18.b64x3") return unpackDigits(packed.data, packed.n);
  const bytes = decodeData(packed.data, packed.enc);
  const width = packed.enc === "u24le.b64" ? 3 : 4;
  expectLength(bytes, width, packed.n, packed.enc);
  const ids = new Array<number>(packed.n);
  if (width === 3) {
    for (let i = 0, o = 0; i < packed.n; i++, o += 3)
      ids[i] = bytes[o] | (bytes[o + 1] << 8) | (bytes[o + 2] << 16);
    return ids;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < packed.n; i++) {
    const id = view.getInt32(i * 4, true);
    if (id < 0) throw new TokenPackingError(`${packed.enc}: token id at index ${i} is negative (${id})`);
    ids[i] = id;
  }
  return ids;
}

export function packLogprobs(logprobs: readonly number[]): PackedLogprobs {
  const floats = new Float32Array(logprobs.length);
  for (let i = 0; i < logprobs.length; i++) {
    const value = logprobs[i];
    if (!Number.isFinite(value))
      throw new TokenPackingError(`logprob at index ${i} is not a finite number (${value})`);
    floats[i] = value;
  }
  // Float32Array is platform-endian; every engine we target is little-endian, but be exact.
  const bytes = new Uint8Array(floats.buffer);
  if (!LITTLE_ENDIAN) swapEvery4(bytes);
  return { enc: "f32le.b64", n: logprobs.length, data: bytesToBase64(bytes) };
}

export function unpackLogprobs(packed: PackedLogprobs): number[] {
  const bytes = decodeData(packed.data, packed.enc);
  expectLength(bytes, 4, packed.n, packed.enc);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(packed.n);
  for (let i = 0; i < packed.n; i++) {
    const value = view.getFloat32(i * 4, true);
    // Non-finite values would fail the record schema downstream; name the index here instead.
    if (!Number.isFinite(value))
      throw new TokenPackingError(`${packed.enc}: logprob at index ${i} is ${value}`);
    out[i] = value;
  }
  return out;
}

export class TokenPackingError extends Error {}

function unpackDigits(data: string, n: number): number[] {
  if (data.length !== n * 3) {
    throw new TokenPackingError(
      `u18.b64x3: expected ${n} values (${n * 3} characters), found ${data.length} characters`,
    );
  }
  const ids = new Array<number>(n);
  for (let i = 0, o = 0; i < n; i++, o += 3) {
    const a = digit(data, o);
    const b = digit(data, o + 1);
    const c = digit(data, o + 2);
    ids[i] = (a << 12) | (b << 6) | c;
  }
  return ids;
}

function digit(data: string, at: number): number {
  const code = data.charCodeAt(at);
  const value = code < 128 ? DIGIT_VALUES[code] : -1;
  if (value < 0) {
    throw new TokenPackingError(
      `u18.b64x3: character ${JSON.stringify(data[at])} at ${at} is not a base64 digit`,
    );
  }
  return value;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function swapEvery4(bytes: Uint8Array): void {
  for (let i = 0; i < bytes.length; i += 4) {
    const a = bytes[i];
    const b = bytes[i + 1];
    bytes[i] = bytes[i + 3];
    bytes[i + 1] = bytes[i + 2];
    bytes[i + 2] = b;
    bytes[i + 3] = a;
  }
}

function decodeData(data: string, enc: string): Uint8Array {
  try {
    return base64ToBytes(data);
  } catch (err) {
    throw new TokenPackingError(`${enc}: data is ${(err as Error).message}`);
  }
}

function expectLength(bytes: Uint8Array, width: number, n: number, enc: string): void {
  if (bytes.length !== width * n) {
    throw new TokenPackingError(
      `${enc}: expected ${n} values (${width * n} bytes), found ${bytes.length} bytes`,
    );
  }
}

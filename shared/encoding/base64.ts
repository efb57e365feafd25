/**
 * Base64 for shared code (Workers and Node). The portable path is `btoa`/`atob` over a binary
 * string; where the runtime has a native bulk codec (`Buffer` in Node, and in
 * Workers with nodejs_compat) that is used instead: it is ~25x faster
 * on the 36 KB token arrays of a capture, which the proxy encodes on every call.
 */

const CHUNK = 0x8000;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

interface NativeBuffer {
  from(data: ArrayBufferLike, offset: number, length: number): { toString(enc: "base64"): string };
  from(data: string, enc: "base64"): Uint8Array<ArrayBuffer>;
}
const NativeBuffer = (globalThis as { Buffer?: NativeBuffer }).Buffer;

export function bytesToBase64(bytes: Uint8Array): string {
  if (!NativeBuffer) return portable.encode(bytes);
  return NativeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** Throws `Base64Error` (never a DOMException) for text that is not canonical base64. */
export function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  if (text.length % 4 !== 0 || !BASE64.test(text)) {
    throw new Base64Error(`not base64: expected [A-Za-z0-9+/] in groups of 4 with "=" padding`);
  }
  if (!NativeBuffer) return portable.decode(text);
  const view = NativeBuffer.from(text, "base64");
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** The path used where there is no `Buffer` (exported so Node tests can check it). */
export const portable = {
  encode(bytes: Uint8Array): string {
    let binary = "";
    for (let i = 0; i < bytes.length; i += CHUNK) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
    }
    return btoa(binary);
  },
  /** Expects text already checked against the base64 alphabet. */
  decode(text: string): Uint8Array<ArrayBuffer> {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  },
};

/** RFC 4648 section 5 alphabet without padding, as used in tokens and URLs. */
export function bytesToBase64Url(bytes: Uint8Array): string {
  return bytesToBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function base64UrlToBytes(text: string): Uint8Array<ArrayBuffer> {
  if (!BASE64URL.test(text) || text.length % 4 === 1) {
    throw new Base64Error(`not base64url: expected [A-Za-z0-9_-] without padding`);
  }
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  return base64ToBytes(padded);
}

export class Base64Error extends Error {}

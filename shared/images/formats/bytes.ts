/** Big- and little-endian reads that never throw: a read past the end gives -1, which no check accepts. */
export function u16be(b: Uint8Array, p: number): number {
  return p + 2 <= b.length ? (b[p] << 8) | b[p + 1] : -1;
}

export function u16le(b: Uint8Array, p: number): number {
  return p + 2 <= b.length ? b[p] | (b[p + 1] << 8) : -1;
}

export function u24le(b: Uint8Array, p: number): number {
  return p + 3 <= b.length ? b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) : -1;
}

export function u32be(b: Uint8Array, p: number): number {
  return p + 4 <= b.length ? ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) >>> 0 : -1;
}

export function u32le(b: Uint8Array, p: number): number {
  return p + 4 <= b.length ? ((b[p + 3] << 24) | (b[p + 2] << 16) | (b[p + 1] << 8) | b[p]) >>> 0 : -1;
}

export function ascii(b: Uint8Array, p: number, n: number): string {
  return p + n <= b.length ? String.fromCharCode(...b.subarray(p, p + n)) : "";
}

/** What a format checker finds: the image's size in pixels, or why the bytes are not a well-formed image. */
export type Checked = { width: number; height: number } | { problem: string };

import { ascii, type Checked, u16le, u24le, u32le } from "./bytes.ts";

/**
 * A WebP is well formed when: `RIFF`, a size that is exactly the rest of the file, `WEBP`, then
 * chunks each whole (padded to even), the first a `VP8 ` (key frame start code), `VP8L` (signature
 * 0x2f, version 0) or `VP8X` (extended; then a `VP8 `/`VP8L` image or `ANMF` frames must follow),
 * with non-zero sides. The size is the largest of the canvas and any bitstream's header; the
 * compressed data is not decoded.
 */
export function checkWebp(b: Uint8Array): Checked {
  if (u32le(b, 4) + 8 !== b.length) return { problem: "its RIFF size is not the file's size" };
  let p = 12;
  let width = 0;
  let height = 0;
  let image = false;
  let extended = false;
  for (let first = true; p < b.length; first = false) {
    const type = ascii(b, p, 4);
    const len = u32le(b, p + 4);
    const data = p + 8;
    if (len < 0 || data + len > b.length)
      return { problem: `its ${JSON.stringify(type)} chunk runs past the end` };
    const dims = bitstreamSize(type, b.subarray(data, data + len));
    if (typeof dims === "string") return { problem: dims };
    if (dims) {
      width = Math.max(width, dims.width);
      height = Math.max(height, dims.height);
      if (type === "VP8X") extended = true;
      else image = true;
    } else if (first) return { problem: `its first chunk is ${JSON.stringify(type)}, not VP8, VP8L or VP8X` };
    if (type === "ANMF") image = true;
    p = data + len + (len & 1);
  }
  if (p !== b.length) return { problem: "its last chunk runs past the end" };
  if (!image) return { problem: extended ? "its VP8X canvas holds no image or frame" : "it holds no image" };
  return { width, height };
}

/** The size a bitstream or canvas chunk declares, null for other chunks, a string when malformed. */
function bitstreamSize(type: string, d: Uint8Array): { width: number; height: number } | string | null {
  if (type === "VP8 ") {
    if (d.length < 10 || (d[0] & 1) !== 0 || d[3] !== 0x9d || d[4] !== 0x01 || d[5] !== 0x2a)
      return "its VP8 chunk has no key frame header";
    return nonZero(u16le(d, 6) & 0x3fff, u16le(d, 8) & 0x3fff, "VP8");
  }
  if (type === "VP8L") {
    const bits = u32le(d, 1);
    if (d.length < 5 || d[0] !== 0x2f || bits >>> 29 !== 0) return "its VP8L chunk has no valid header";
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (type === "VP8X") {
    if (d.length < 10) return "its VP8X chunk is too short";
    return { width: u24le(d, 4) + 1, height: u24le(d, 7) + 1 };
  }
  return null;
}

function nonZero(width: number, height: number, what: string): { width: number; height: number } | string {
  return width > 0 && height > 0
    ? { width, height }
    : `its ${what} header declares ${width}x${height} pixels`;
}

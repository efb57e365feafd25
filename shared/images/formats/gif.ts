import { ascii, type Checked, u16le } from "./bytes.ts";

/**
 * A GIF is well formed when: `GIF87a` or `GIF89a`, a logical screen of non-zero size, its colour
 * tables whole, then blocks (images with their LZW data as sub-blocks, extensions) each whole, at
 * least one image of non-zero size, and the trailer as the last byte. The size is the largest of
 * the screen and any frame (a decoder may allocate either); the LZW data is not decoded.
 */
export function checkGif(b: Uint8Array): Checked {
  const version = ascii(b, 0, 6);
  if (version !== "GIF87a" && version !== "GIF89a") return { problem: "its header is not GIF87a or GIF89a" };
  let width = u16le(b, 6);
  let height = u16le(b, 8);
  if (width <= 0 || height <= 0) return { problem: `its logical screen is ${width}x${height} pixels` };
  let p = 13 + colorTableBytes(b[10]);
  let images = 0;
  for (;;) {
    if (p >= b.length) return { problem: "it ends before its trailer" };
    const block = b[p];
    if (block === 0x3b) break;
    if (block === 0x2c) {
      const fw = u16le(b, p + 5);
      const fh = u16le(b, p + 7);
      if (fw <= 0 || fh <= 0 || p + 10 > b.length) return { problem: `a frame is ${fw}x${fh} pixels` };
      width = Math.max(width, fw);
      height = Math.max(height, fh);
      p += 10 + colorTableBytes(b[p + 9]);
      const codeSize = b[p];
      if (!(codeSize >= 2 && codeSize <= 11)) return { problem: "a frame has no valid LZW code size" };
      p = skipSubBlocks(b, p + 1);
      images++;
    } else if (block === 0x21) p = skipSubBlocks(b, p + 2);
    else return { problem: `unknown block 0x${block.toString(16)} at byte ${p}` };
    if (p < 0) return { problem: "a block runs past the end" };
  }
  if (images === 0) return { problem: "it holds no image" };
  if (p + 1 !== b.length) return { problem: `${b.length - p - 1} bytes follow its trailer` };
  return { width, height };
}

function colorTableBytes(flags: number): number {
  return flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0;
}

/** The offset after a run of sub-blocks and its zero terminator; -1 if it runs past the end. */
function skipSubBlocks(b: Uint8Array, from: number): number {
  let p = from;
  while (p < b.length) {
    const size = b[p];
    p += 1 + size;
    if (size === 0) return p;
  }
  return -1;
}

import { type Checked, u16be } from "./bytes.ts";

/** Start-of-frame markers (baseline, extended, progressive, lossless; Huffman and arithmetic). */
const SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);
const SOS = 0xda;
const EOI = 0xd9;

/**
 * A JPEG is well formed when: SOI, then marker segments each whole within the file, exactly one
 * frame header (SOF) with both sides non-zero and its length matching its component count, at
 * least one scan (SOS) after it, whose entropy-coded data runs to the next marker, and EOI as the
 * file's last two bytes. The Huffman-coded data is not decoded.
 */
export function checkJpeg(b: Uint8Array): Checked {
  let p = 2;
  let dims: { width: number; height: number } | null = null;
  let scans = 0;
  for (;;) {
    if (b[p] !== 0xff) return { problem: p >= b.length ? "it ends before EOI" : `no marker at byte ${p}` };
    while (b[p] === 0xff) p++;
    if (p >= b.length) return { problem: "it ends before EOI" };
    const marker = b[p++];
    if (marker === EOI) break;
    if (marker === 0xd8) return { problem: "it has a second SOI" };
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    const len = u16be(b, p);
    if (len < 2 || p + len > b.length)
      return { problem: `its marker 0x${marker.toString(16)} segment runs past the end` };
    if (SOF.has(marker)) {
      if (dims) return { problem: "it has a second frame header" };
      const height = u16be(b, p + 3);
      const width = u16be(b, p + 5);
      const components = b[p + 7];
      if (len < 8 || len !== 8 + 3 * components || components === 0)
        return { problem: "its frame header is malformed" };
      if (width === 0 || height === 0)
        return { problem: `its frame header declares ${width}x${height} pixels` };
      dims = { width, height };
    }
    p += len;
    if (marker === SOS) {
      if (!dims) return { problem: "it has a scan before its frame header" };
      scans++;
      p = endOfEntropyData(b, p);
    }
  }
  if (!dims) return { problem: "it has no frame header" };
  if (scans === 0) return { problem: "it has no scan" };
  if (p !== b.length) return { problem: `${b.length - p} bytes follow its EOI marker` };
  return dims;
}

/** The offset of the first marker after a scan's data: 0xFF not followed by a stuffed 0 or a restart. */
function endOfEntropyData(b: Uint8Array, from: number): number {
  let p = from;
  for (;;) {
    p = b.indexOf(0xff, p);
    if (p < 0 || p + 1 >= b.length) return b.length;
    const next = b[p + 1];
    if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) p += 2;
    else if (next === 0xff) p += 1;
    else return p;
  }
}

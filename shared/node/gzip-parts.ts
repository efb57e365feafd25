import { constants, crc32, deflateRawSync } from "node:zlib";
import type { GzipPart } from "../encoding/gzip.ts";

/**
 * A `GzipFn` for Node: node:zlib, synchronously, at a low level, with no stream machinery.
 *
 * Parts are compressed as runs: consecutive parts of the same kind form one raw deflate stream,
 * ended by a sync flush (byte-aligned, not final) except the last, so the streams concatenate
 * into one valid deflate body behind a gzip header and CRC-32 trailer. A dense run (packed
 * token ids) is first sampled: when string matching gains little over Huffman coding alone on
 * the sample, the run is Huffman-coded without matching. That gives the same size on near-random ids at a third of the CPU
 * (deflate's match search costs most where it finds nothing); ids that repeat keep matching.
 */

/** Level 1: with `u18.b64x3` ids, captures stay under 3 stored bytes per token (see docs/proxy.md). */
export const CAPTURE_GZIP_LEVEL = 1;
const SAMPLE_BYTES = 4096;
/** String matching must beat Huffman coding alone by this factor on the sample to be used. */
const MATCHING_GAIN = 0.9;

const HEADER = Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff);

export function gzipPartsSync(parts: readonly GzipPart[], level = CAPTURE_GZIP_LEVEL): Uint8Array {
  const runs = runsOf(parts);
  const bodies: Uint8Array[] = [];
  let crc = 0;
  let size = 0;
  runs.forEach((run, i) => {
    const last = i === runs.length - 1;
    crc = crc32(run.bytes, crc);
    size += run.bytes.length;
    const strategy =
      run.dense && !worthMatching(run.bytes) ? constants.Z_HUFFMAN_ONLY : constants.Z_DEFAULT_STRATEGY;
    bodies.push(
      deflateRawSync(run.bytes, {
        level,
        strategy,
        finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
        chunkSize: Math.max(64 * 1024, run.bytes.length + 1024),
      }),
    );
  });
  if (runs.length === 0) bodies.push(deflateRawSync(new Uint8Array(0), { level }));
  const trailer = new Uint8Array(8);
  const view = new DataView(trailer.buffer);
  view.setUint32(0, crc >>> 0, true);
  view.setUint32(4, size >>> 0, true);
  return concat([HEADER, ...bodies, trailer]);
}

function worthMatching(bytes: Uint8Array): boolean {
  if (bytes.length <= SAMPLE_BYTES) return true;
  const sample = bytes.subarray(0, SAMPLE_BYTES);
  const coded = deflateRawSync(sample, { level: 1, strategy: constants.Z_HUFFMAN_ONLY }).length;
  return deflateRawSync(sample, { level: 1 }).length < coded * MATCHING_GAIN;
}

/** Consecutive parts of one kind, joined (a copy only when a run has several parts). */
function runsOf(parts: readonly GzipPart[]): GzipPart[] {
  const runs: GzipPart[] = [];
  let pending: Uint8Array[] = [];
  let dense = false;
  const flush = () => {
    if (pending.length > 0) runs.push({ bytes: concat(pending), dense });
    pending = [];
  };
  for (const p of parts) {
    if (p.bytes.length === 0) continue;
    if ((p.dense ?? false) !== dense) flush();
    dense = p.dense ?? false;
    pending.push(p.bytes);
  }
  flush();
  return runs;
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  let total = 0;
  for (const c of chunks) total += c.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

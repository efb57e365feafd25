// Stored size and encode/decode time of one realistic capture (test/support/realistic-capture.ts):
// the stored form against plain JSON + gzip, and what each packing step buys.
// Run alone: `node bench/capture-encoding.ts`, or through `npm run bench -- capture-encoding`.
import { decodeCapture, encodeCapture, encodeCaptureWith } from "../shared/capture-codec.ts";
import { gunzip, gzip } from "../shared/encoding/gzip.ts";
import { gzipPartsSync } from "../shared/node/gzip-parts.ts";
import { buildRealisticCapture } from "../test/support/realistic-capture.ts";
import type { Benchmark } from "./benchmark.ts";

const ROUNDS = 40;

async function timeEach(rounds: number, f: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await f();
    out.push(performance.now() - start);
  }
  return out.sort((a, b) => a - b);
}

const median = (xs: number[]) => xs[Math.floor(xs.length / 2)];
const p90 = (xs: number[]) => xs[Math.floor(xs.length * 0.9)];

const bench: Benchmark = {
  name: "capture-encoding",
  title: "Stored capture size (bytes per captured token) and encode/decode time",
  async run() {
    const rec = await buildRealisticCapture();
    const tokens = (rec.prompt_token_ids?.length ?? 0) + (rec.response_token_ids?.length ?? 0);
    const encoder = new TextEncoder();
    const stored = await encodeCapture(rec);
    const plainGzip = await gzip(encoder.encode(JSON.stringify(rec)));
    const withoutSharing = await gzip(
      encoder.encode(
        JSON.stringify({
          ...JSON.parse(new TextDecoder().decode(await gunzip(stored))),
          chat_request: rec.chat_request,
        }),
      ),
    );
    // The Node proxy's path: node:zlib level 1 by parts, the request stored as the bytes received.
    const requestJson = encoder.encode(JSON.stringify(rec.request));
    const proxyPath = () => encodeCaptureWith(rec, { gzip: gzipPartsSync, requestJson });
    const storedByProxy = await proxyPath();
    for (let i = 0; i < 5; i++) await decodeCapture(await encodeCapture(rec));
    for (let i = 0; i < 5; i++) await proxyPath();
    const enc = await timeEach(ROUNDS, () => encodeCapture(rec));
    const encProxy = await timeEach(ROUNDS, proxyPath);
    const dec = await timeEach(ROUNDS, () => decodeCapture(stored));
    const row = (name: string, bytes: number) => `| ${name} | ${bytes} | ${(bytes / tokens).toFixed(2)} |`;
    const markdown = [
      `One capture: ${rec.prompt_token_ids?.length} prompt ids + ${rec.response_token_ids?.length} response ids with logprobs, request JSON ${JSON.stringify(rec.request).length} bytes (Qwen3 tokenizer, real source files as tool results).`,
      "",
      "| form | bytes | bytes per captured token |",
      "|---|---|---|",
      row("plain JSON, token arrays as numbers", encoder.encode(JSON.stringify(rec)).length),
      row("plain JSON + gzip", plainGzip.length),
      row("packed token arrays + gzip, chat_request stored as is", withoutSharing.length),
      row("stored form (packed arrays + chat_request sharing strings with request + gzip)", stored.length),
      row(
        "stored form as the Node proxy writes it (node:zlib level 1, dense runs sampled)",
        storedByProxy.length,
      ),
      "",
      `Encode: median ${median(enc).toFixed(2)} ms, p90 ${p90(enc).toFixed(2)} ms (CompressionStream); as the Node proxy does it: median ${median(encProxy).toFixed(2)} ms, p90 ${p90(encProxy).toFixed(2)} ms; decode: median ${median(dec).toFixed(2)} ms, p90 ${p90(dec).toFixed(2)} ms (${ROUNDS} rounds each).`,
    ].join("\n");
    return { markdown };
  },
};
export default bench;

if (import.meta.url === `file://${process.argv[1]}`) {
  bench.run().then((r) => console.log(r.markdown));
}

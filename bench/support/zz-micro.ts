import { gzipSync, constants, gzip as zgzip } from "node:zlib";
import { promisify } from "node:util";
import { encodeCapture } from "../../shared/capture-codec.ts";
import { gzip } from "../../shared/encoding/gzip.ts";
import { shareStrings } from "../../shared/encoding/string-refs.ts";
import { packTokenIds } from "../../shared/encoding/token-packing.ts";
import { buildRealisticCapture } from "../../test/support/realistic-capture.ts";
const rec = await buildRealisticCapture();
const t = async (name: string, n: number, f: () => unknown) => { for (let i = 0; i < 20; i++) await f(); const s = performance.now(); for (let i = 0; i < n; i++) await f(); console.log(name, ((performance.now() - s) / n).toFixed(3), "ms"); };
const enc = await encodeCapture(rec);
const json = new TextEncoder().encode(JSON.stringify(JSON.parse(new TextDecoder().decode(await (await import("../../shared/encoding/gzip.ts")).gunzip(enc)))));
console.log("json bytes", json.length, "stored", enc.length, "tokens", rec.prompt_token_ids!.length + rec.response_token_ids!.length);
await t("encodeCapture", 100, () => encodeCapture(rec));
await t("CompressionStream gzip", 100, () => gzip(json));
for (const level of [1, 2, 3, 4, 5, 6]) { const out = gzipSync(json, { level }); await t(`gzipSync L${level} size ${out.length} b/tok ${(out.length/12500).toFixed(2)}`, 100, () => gzipSync(json, { level })); }
for (const strategy of [constants.Z_FILTERED, constants.Z_HUFFMAN_ONLY, constants.Z_RLE]) { const out = gzipSync(json, { level: 1, strategy }); await t(`L1 strat ${strategy} size ${out.length}`, 50, () => gzipSync(json, { level: 1, strategy })); }
const pz = promisify(zgzip);
await t("async zlib gzip L6", 100, () => pz(json));
await t("shareStrings", 100, () => shareStrings(rec.request, rec.chat_request));
await t("packTokenIds", 100, () => packTokenIds(rec.prompt_token_ids!));
await t("JSON.stringify rec", 100, () => JSON.stringify(rec));

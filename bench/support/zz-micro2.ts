import { gzipSync } from "node:zlib";
import { gunzip } from "../../shared/encoding/gzip.ts";
import { encodeCapture } from "../../shared/capture-codec.ts";
import { buildRealisticCapture } from "../../test/support/realistic-capture.ts";
const rec = await buildRealisticCapture();
const stored = JSON.parse(new TextDecoder().decode(await gunzip(await encodeCapture(rec))));
const t = (name: string, n: number, f: () => unknown) => { for (let i = 0; i < 20; i++) f(); const s = performance.now(); for (let i = 0; i < n; i++) f(); return ((performance.now() - s) / n).toFixed(3); };
for (const k of Object.keys(stored)) { const s = Buffer.from(JSON.stringify(stored[k])); if (s.length < 1000) continue; for (const level of [1, 6]) console.log(k, s.length, `L${level}`, gzipSync(s, { level }).length, t(k, 50, () => gzipSync(s, { level })), "ms"); }

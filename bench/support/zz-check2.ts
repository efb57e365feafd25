import { gzipPartsSync } from "../../shared/node/gzip-parts.ts";
import { packTokenIds } from "../../shared/encoding/token-packing.ts";
import { buildRealisticCapture } from "../../test/support/realistic-capture.ts";
const rec = await buildRealisticCapture();
const enc = new TextEncoder();
const fake = Array.from({ length: 12000 }, (_, i) => (i * 7919) % 151_000);
for (const [n, ids] of [["real", rec.prompt_token_ids!], ["fake", fake]] as const) {
  const parts = [{ bytes: enc.encode(JSON.stringify(packTokenIds(ids as number[]))), dense: true }];
  const t0 = process.cpuUsage(); let out; for (let i = 0; i < 300; i++) out = gzipPartsSync(parts); const c = process.cpuUsage(t0);
  console.log(n, out!.length, ((c.user + c.system) / 300000).toFixed(3), "ms");
}

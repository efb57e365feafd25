import { gzipSync } from "node:zlib";
import { buildRealisticCapture } from "../../test/support/realistic-capture.ts";
const rec = await buildRealisticCapture();
const A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const u18 = (ids: number[]) => { const b = Buffer.alloc(ids.length * 3); for (let i = 0; i < ids.length; i++) { const v = ids[i]; b[3*i] = A.charCodeAt(v >> 12); b[3*i+1] = A.charCodeAt((v >> 6) & 63); b[3*i+2] = A.charCodeAt(v & 63); } return b.toString("latin1"); };
const u24 = (ids: number[]) => { const b = Buffer.alloc(ids.length * 3); for (let i = 0; i < ids.length; i++) { const v = ids[i]; b[3*i] = v & 255; b[3*i+1] = (v >> 8) & 255; b[3*i+2] = v >> 16; } return b.toString("base64"); };
const fake = Array.from({ length: 12000 }, (_, i) => (i * 7919) % 151_000);
for (const [name, ids] of [["real", rec.prompt_token_ids!], ["fake", fake]] as const) for (const [e, f] of [["u24", u24], ["u18", u18]] as const) { const s = JSON.stringify(f(ids as number[])); console.log(name, e, s.length, [1, 2, 3, 6].map((l) => `L${l}=${gzipSync(s, { level: l }).length}`).join(" ")); }

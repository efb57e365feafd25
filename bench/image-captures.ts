// Stored bytes per call of a computer-use session: 20 turns, each call re-sending the last 5
// screenshots (1280x800 PNGs), through the real proxy into a store. "before" is the capture as the
// proxy stored it before images were kept once (the request with every image inline, encoded the
// same way); "after" is what the proxy stores now: the capture with placeholders plus each new
// image object. Run alone: `node bench/image-captures.ts`, or `npm run bench -- image-captures`.
import { decodeCapture, encodeCaptureWith } from "../shared/capture-codec.ts";
import { bytesToBase64 } from "../shared/encoding/base64.ts";
import { restoreImages } from "../shared/images/image-refs.ts";
import { keys } from "../shared/keys.ts";
import { MemoryStore } from "../shared/store/memory-store.ts";
import { startFakeUpstream } from "../test/support/fake-upstream.ts";
import { makePng } from "../test/support/png.ts";
import { startProxy } from "../test/support/proxy.ts";
import type { Benchmark } from "./benchmark.ts";

const TURNS = 20;
const KEEP = 5;
const W = 1280;
const H = 800;

/**
 * A desktop-like screenshot: flat panels, a window that moves each turn, and sparse dark "text"
 * pixels (about 8% of the window's area) that differ per turn, so PNG compresses it as it would
 * a real one (tens to hundreds of KB), not to nothing.
 */
function screenshot(turn: number): Uint8Array {
  let s = (Math.imul(turn + 1, 2654435761) + 7) >>> 0;
  const rand = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s >>> 8;
  };
  const wx = 100 + ((turn * 37) % 300);
  const wy = 80 + ((turn * 23) % 200);
  return makePng(W, H, (x, y) => {
    if (y < 32) return [40, 44, 52];
    const inWindow = x >= wx && x < wx + 800 && y >= wy && y < wy + 480;
    if (!inWindow) return [70 + (y >> 4), 110, 160];
    if (y < wy + 28) return [225, 225, 230];
    return rand() % 100 < 8 ? [20, 20, 20] : [255, 255, 255];
  });
}

interface Row {
  turn: number;
  before: number;
  capture: number;
  newImages: number;
}

/** Per call: the old inline capture's size, the new capture's size, the image objects it added. */
export async function measure(): Promise<{ rows: Row[]; pngBytes: number[] }> {
  const upstream = await startFakeUpstream();
  const store = new MemoryStore();
  const proxy = await startProxy({ upstream: upstream.url, auth: "off", store, streamMode: "synthesize" });
  const shots = Array.from({ length: TURNS }, (_, i) => screenshot(i));
  const rows: Row[] = [];
  try {
    for (let turn = 0; turn < TURNS; turn++) {
      const messages: unknown[] = [{ role: "system", content: "You operate a desktop through screenshots." }];
      for (let k = Math.max(0, turn - KEEP + 1); k <= turn; k++) {
        messages.push({
          role: "user",
          content: [
            { type: "text", text: `Turn ${k + 1}: the screen now.` },
            { type: "image_url", image_url: { url: `data:image/png;base64,${bytesToBase64(shots[k])}` } },
          ],
        });
        if (k < turn) messages.push({ role: "assistant", content: "ok" });
      }
      const body = new TextEncoder().encode(JSON.stringify({ model: "m", messages }));
      const blobsBefore = new Set(await store.list("blobs/"));
      const res = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer bench-session" },
        body,
      });
      if (!res.ok) throw new Error(`call ${turn + 1}: ${res.status} ${await res.text()}`);
      const captureKey = (await store.list("captures/")).at(-1) as string;
      const stored = (await store.get(captureKey)) as Uint8Array;
      let newImages = 0;
      for (const k of await store.list("blobs/"))
        if (!blobsBefore.has(k)) newImages += ((await store.get(k)) as Uint8Array).byteLength;
      // The old path: the same record with its images inline, the raw body stored verbatim.
      const inline = await restoreImages(await decodeCapture(stored), (h) => store.get(keys.imageBlob(h)));
      const { image_refs: _, ...old } = inline;
      const before = (await encodeCaptureWith(old, { requestJson: body })).byteLength;
      rows.push({ turn: turn + 1, before, capture: stored.byteLength, newImages });
    }
  } finally {
    await proxy.close();
    await upstream.close();
  }
  return { rows, pngBytes: shots.map((s) => s.byteLength) };
}

const kb = (n: number) => (n / 1024).toFixed(1);

export function table(rows: Row[]): string {
  const lines = [
    "| call | before: capture (images inline) KB | after: capture KB | after: new image objects KB | after: total KB |",
    "|---|---|---|---|---|",
  ];
  // The calls where the count of re-sent screenshots grows, then a few of the steady state.
  for (const r of rows.filter((r) => r.turn <= KEEP + 1 || r.turn % 5 === 0))
    lines.push(
      `| ${r.turn} | ${kb(r.before)} | ${kb(r.capture)} | ${kb(r.newImages)} | ${kb(r.capture + r.newImages)} |`,
    );
  const sum = (f: (r: Row) => number) => rows.reduce((a, r) => a + f(r), 0);
  lines.push(
    `| all ${rows.length} | ${kb(sum((r) => r.before))} | ${kb(sum((r) => r.capture))} | ${kb(sum((r) => r.newImages))} | ${kb(sum((r) => r.capture + r.newImages))} |`,
  );
  return lines.join("\n");
}

const bench: Benchmark = {
  name: "image-captures",
  title: "Stored bytes per call of a computer-use session re-sending its last 5 screenshots",
  async run() {
    const { rows, pngBytes } = await measure();
    const mean = pngBytes.reduce((a, b) => a + b, 0) / pngBytes.length;
    return {
      markdown: `${TURNS} calls through the proxy (fake engine), each with the last ${KEEP} screenshots (${W}x${H} PNG, mean ${kb(mean)} KB). Before: each capture holds its images inline; after: one object per distinct image (\`blobs/sha256/{hash}\`) and captures that reference them.

${table(rows)}`,
    };
  },
};
export default bench;

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows, pngBytes } = await measure();
  console.log(`PNG sizes KB: ${pngBytes.map(kb).join(" ")}`);
  console.log(table(rows));
}

// Our proxy as a benchmark target: `node bench/support/polar-proxy-process.ts UPSTREAM PORT STORE`.
// STORE is an `openStore` spec, or `discard` for a store that accepts and drops every object: the
// capture is still built and encoded, only the write is skipped (benchmarks only; the product has
// no such mode, a capture is never dropped).

import { startNodeProxy } from "../../proxy-worker/node.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";

const [upstreamUrl, port, storeSpec] = process.argv.slice(2);

const discard: ObjectStore = {
  capabilities: { atomicPutIfAbsent: true },
  url: "discard://",
  async put() {},
  async putIfAbsent() {
    return true;
  },
  async get() {
    return null;
  },
  async list() {
    return [];
  },
  async delete() {},
};

const proxy = await startNodeProxy({
  upstreamUrl,
  port: Number(port),
  store: storeSpec === "discard" ? discard : storeSpec,
  signingKey: process.env.POLAR_SIGNING_KEY,
  engine: "vllm",
  // POLAR_BENCH_STREAM_MODE=live|synthesize: the streaming benchmark runs one proxy per mode.
  ...(process.env.POLAR_BENCH_STREAM_MODE
    ? { streamMode: process.env.POLAR_BENCH_STREAM_MODE as "live" | "synthesize" }
    : {}),
  // POLAR_BENCH_STREAM_FLUSH_MS=N: the live mode's write interval (default: the proxy's).
  ...(process.env.POLAR_BENCH_STREAM_FLUSH_MS
    ? { streamFlushMs: Number(process.env.POLAR_BENCH_STREAM_FLUSH_MS) }
    : {}),
  policyVersion: null,
});
console.log(`listening ${proxy.url}`);
process.once("SIGTERM", () => proxy.close().then(() => process.exit(0)));

// POLAR_BENCH_MEMLOG=/path: sample process.memoryUsage() and write the peaks there on exit, to
// tell the V8 heap from Buffers and native (zlib, malloc) memory when peak RSS is too high.
const memLog = process.env.POLAR_BENCH_MEMLOG;
if (memLog) {
  const { writeFileSync } = await import("node:fs");
  const peak: Record<string, number> = {};
  const sample = () => {
    for (const [k, v] of Object.entries(process.memoryUsage())) peak[k] = Math.max(peak[k] ?? 0, v);
    const mb = Object.entries(peak).map(([k, v]) => `${k} ${(v / 2 ** 20).toFixed(0)} MB`);
    writeFileSync(memLog, `${mb.join(", ")}\n`);
  };
  setInterval(sample, 100).unref();
}

// A quick look at one proxy process, for profiling and A/B checks (bench/proxy.ts is the record):
// starts fake-vllm and `polar-proxy-process.ts` with store spec argv[2] (default `discard`), loads
// each provider, prints req/s, p50, CPU ms/req and peak RSS. Narrow with env: P=anthropic,google
// (providers), C=1,64 (concurrency), D=3 (seconds), S=false,true (streamed), NODEARGS="--cpu-prof
// --cpu-prof-dir=/tmp/prof" (flags for the proxy process).
import { join } from "node:path";
import autocannon from "autocannon";
import { mintSessionToken } from "../../shared/session-token.ts";
import { freePort, startChild } from "./children.ts";
import { cpuMs, cpuSplitMs, peakRssMb } from "./process-stats.ts";
import { workload } from "./workloads.ts";

const root = new URL("../..", import.meta.url).pathname;
const store = process.argv[2] ?? "discard";
const providers = (process.env.P ?? "anthropic,openai_chat,openai_responses,google").split(",");
const conc = (process.env.C ?? "1,64").split(",").map(Number);
const dur = Number(process.env.D ?? 3);
const streams = (process.env.S ?? "false").split(",").map((s) => s === "true");
const extra = (process.env.NODEARGS ?? "").split(" ").filter(Boolean);
const listening = (l: string) => /listening/.test(l);
const up = await freePort();
const u = await startChild(process.execPath, [join(root, "bench/support/fake-vllm.ts"), String(up)], {
  ready: listening,
});
const pp = await freePort();
const key = "bench-signing-key-0123456789abcdef";
const p = await startChild(
  process.execPath,
  [...extra, join(root, "bench/support/polar-proxy-process.ts"), `http://127.0.0.1:${up}`, String(pp), store],
  { env: { ...process.env, POLAR_SIGNING_KEY: key }, ready: listening },
);
const tok = await mintSessionToken({ sessionId: "bench-q", taskId: "bench", ttlSeconds: 86400 }, key);
const hdr = (prov: string): Record<string, string> =>
  prov === "anthropic"
    ? { "x-api-key": tok }
    : prov === "google"
      ? { "x-goog-api-key": tok }
      : { authorization: `Bearer ${tok}` };
try {
  for (const prov of providers)
    for (const stream of streams)
      for (const c of conc) {
        const w = workload(prov as never, stream, "x");
        const opts = {
          url: `http://127.0.0.1:${pp}${w.path}`,
          method: "POST" as const,
          headers: { ...w.headers, ...hdr(prov) },
          body: w.body,
          connections: c,
        };
        await autocannon({ ...opts, duration: 1 });
        const before = cpuMs(p.pid);
        const split0 = cpuSplitMs(p.pid);
        const r = await autocannon({ ...opts, duration: dur });
        const cpu = cpuMs(p.pid) - before;
        const split1 = cpuSplitMs(p.pid);
        const n = Math.max(1, r["2xx"]);
        const sys = ((split1.system - split0.system) / n).toFixed(2);
        console.log(
          `${prov} stream=${stream} c=${c}: ${(r["2xx"] / r.duration).toFixed(0)} req/s, p50 ${r.latency.p50} ms, CPU ${(cpu / n).toFixed(2)} ms/req (sys ${sys}), non2xx ${r.non2xx} err ${r.errors}, rss ${peakRssMb(p.pid).toFixed(0)} MB`,
        );
      }
} finally {
  await p.stop();
  await u.stop();
}

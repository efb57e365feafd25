// A quick A/B of live streaming's CPU per call against the read-only floor, for profiling (the
// `streaming` benchmark is the record): starts `polar policy --tokens-per-second 50`, one live proxy
// (directory store in a temp dir) and `pass-through.ts --discard`, sends N calls (Chat Completions,
// 500 tokens) to each side by side, K at a time, and prints CPU ms per call. Env: N=8, K=4,
// NODEARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (flags for the proxy process).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { mintSessionToken } from "../../shared/session-token.ts";
import { freePort, startChild } from "./children.ts";
import { cpuMs, cpuSplitMs } from "./process-stats.ts";

const root = new URL("../..", import.meta.url).pathname;
const n = Number(process.env.N ?? 8);
const k = Number(process.env.K ?? 4);
const extra = (process.env.NODEARGS ?? "").split(" ").filter(Boolean);
const key = "bench-stream-quick-key";
const ready = (l: string) => l.includes("listening");
const pp = await freePort();
const policy = await startChild(
  process.execPath,
  [`${root}bin/polar.js`, "policy", "--port", String(pp), "--tokens-per-second", "50"],
  { ready },
);
const upstream = `http://127.0.0.1:${pp}`;
const lp = await freePort();
const storeDir = mkdtempSync(`${tmpdir()}/polar-stream-quick-`);
const live = await startChild(
  process.execPath,
  [...extra, `${root}bench/support/polar-proxy-process.ts`, upstream, String(lp), storeDir],
  { env: { ...process.env, POLAR_SIGNING_KEY: key, POLAR_BENCH_STREAM_MODE: "live" }, ready },
);
const rp = await freePort();
const readOnly = await startChild(
  process.execPath,
  [`${root}bench/support/pass-through.ts`, upstream, String(rp), "--discard"],
  { ready },
);
const prompt = `Follow the script.\n\n\`\`\`polar-script\nsay: ${"The quick brown fox jumps over the lazy dog. ".repeat(200)}\n\`\`\`\n`;
const body = { model: "m", max_tokens: 500, stream: true, messages: [{ role: "user", content: prompt }] };
const engineBody = {
  ...body,
  return_token_ids: true,
  logprobs: true,
  stream_options: { include_usage: true },
};
async function drain(url: string, b: unknown, token?: string): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(b),
  });
  await res.arrayBuffer();
}
const token = await mintSessionToken({ sessionId: "stream-quick", taskId: "bench" }, key);
try {
  await Promise.all([
    drain(`http://127.0.0.1:${lp}/v1/chat/completions`, body, token),
    drain(`http://127.0.0.1:${rp}/v1/chat/completions`, engineBody),
  ]);
  const before = { live: cpuMs(live.pid), read: cpuMs(readOnly.pid) };
  const split = { live: cpuSplitMs(live.pid), read: cpuSplitMs(readOnly.pid) };
  const threads = { live: threadTicks(live.pid), read: threadTicks(readOnly.pid) };
  for (let done = 0; done < n; done += k) {
    const batch = Array.from({ length: Math.min(k, n - done) }, () => [
      drain(`http://127.0.0.1:${lp}/v1/chat/completions`, body, token),
      drain(`http://127.0.0.1:${rp}/v1/chat/completions`, engineBody),
    ]).flat();
    await Promise.all(batch);
  }
  const liveMs = (cpuMs(live.pid) - before.live) / n;
  const readMs = (cpuMs(readOnly.pid) - before.read) / n;
  const sys = (pid: number, was: { system: number }) =>
    ((cpuSplitMs(pid).system - was.system) / n).toFixed(1);
  for (const [name, pid] of [
    ["live", live.pid],
    ["read-only", readOnly.pid],
  ] as const) {
    const was = threads[name === "live" ? "live" : "read"];
    const now = threadTicks(pid);
    const parts = [...now]
      .map(([t, ticks]) => [t, ((ticks - (was.get(t) ?? 0)) * 10) / n] as const)
      .filter(([, ms]) => ms > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([t, ms]) => `${t} ${ms.toFixed(1)}`);
    console.log(`${name} CPU ms per call by thread: ${parts.join(", ")}`);
  }
  console.log(
    `system time per call: live ${sys(live.pid, split.live)} ms, read-only ${sys(readOnly.pid, split.read)} ms`,
  );
  console.log(
    `live ${liveMs.toFixed(1)} ms/call, read-only ${readMs.toFixed(1)} ms/call, ratio ${(liveMs / readMs).toFixed(2)}`,
  );
} finally {
  await live.stop();
  await readOnly.stop();
  await policy.stop();
  rmSync(storeDir, { recursive: true, force: true });
}

/** CPU ticks (user + system) per thread name of `pid`, summed over threads of one name. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]));
  }
  return out;
}

// The Worker build under workerd (Miniflare, as the worker tests run it) on the proxy benchmark's
// workload, beside the Node proxy and a bare pass-through, all against the same zero-latency
// vLLM-shaped upstream. CPU per call is the workerd process's user + system time from /proc (its
// R2 binding is served inside workerd, so the capture's write counts too).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { mintSessionToken } from "../shared/session-token.ts";
import { startWorkers } from "../test/worker/worker-host.ts";
import type { Benchmark } from "./benchmark.ts";
import { freePort, startChild } from "./support/children.ts";
import { cpuMs, peakRssMb } from "./support/process-stats.ts";
import { type Workload, workload } from "./support/workloads.ts";

const CALLS = Number(process.env.BENCH_WORKER_CALLS ?? 200);
const ROUNDS = 2;
const CONCURRENCY = (process.env.BENCH_WORKER_CONCURRENCY ?? "1,16").split(",").map(Number);
const PROVIDERS = ["openai_chat", "anthropic"] as const;
const node = process.execPath;
const root = new URL("..", import.meta.url).pathname;
const listening = (line: string) => /listening/.test(line);
const KEY = "bench-worker-signing-key";

interface Target {
  name: string;
  url: string;
  pid: number;
}

/** The workerd process Miniflare started for this process (the one child of that name). */
function workerdPid(): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (name === "workerd" && ppid === process.pid) return Number(entry);
    } catch {
      // the process ended while listing
    }
  }
  throw new Error("no workerd child process found");
}

function keyHeader(w: Workload, key: string): Record<string, string> {
  if (w.provider === "anthropic") return { "x-api-key": key };
  return { authorization: `Bearer ${key}` };
}

async function run(): Promise<{ markdown: string }> {
  const upPort = await freePort();
  const upstream = await startChild(node, [join(root, "bench/support/fake-vllm.ts"), String(upPort)], {
    ready: listening,
  });
  const upUrl = `http://127.0.0.1:${upPort}`;
  const storeDir = mkdtempSync(join(os.tmpdir(), "polar-bench-worker-"));
  const host = await startWorkers([
    { name: "polar", vars: { UPSTREAM_URL: upUrl, POLAR_SIGNING_KEY: KEY, STORE: "r2" }, r2: true },
  ]);
  const passPort = await freePort();
  const pass = await startChild(
    node,
    [join(root, "bench/support/pass-through.ts"), upUrl, String(passPort)],
    {
      ready: listening,
    },
  );
  const nodePort = await freePort();
  const nodeProxy = await startChild(
    node,
    [join(root, "bench/support/polar-proxy-process.ts"), upUrl, String(nodePort), storeDir],
    { env: { ...process.env, POLAR_SIGNING_KEY: KEY }, ready: listening },
  );
  const token = await mintSessionToken(
    { sessionId: "bench-worker", taskId: "bench", ttlSeconds: 86_400 },
    KEY,
  );
  const targets: Target[] = [
    { name: "pass-through (Node)", url: `http://127.0.0.1:${passPort}`, pid: pass.pid },
    { name: "polar on Node (dir store)", url: `http://127.0.0.1:${nodePort}`, pid: nodeProxy.pid },
    { name: "polar Worker in workerd (R2)", url: host.url, pid: workerdPid() },
  ];
  const rows: string[] = [];
  try {
    for (const provider of PROVIDERS)
      for (const stream of [false, true])
        for (const c of CONCURRENCY) {
          const w = workload(provider, stream, "x");
          const eligible = targets.filter((t) => !t.name.startsWith("pass") || provider === "openai_chat");
          const cpu = new Map<Target, number[]>(eligible.map((t) => [t, []]));
          const errors = new Map<Target, number>(eligible.map((t) => [t, 0]));
          for (const t of eligible) await load(t, w, c, Math.max(20, c * 2), token);
          for (let round = 0; round < ROUNDS; round++)
            for (const t of round % 2 === 0 ? eligible : [...eligible].reverse()) {
              const before = cpuMs(t.pid);
              const r = await load(t, w, c, CALLS, token);
              cpu.get(t)!.push((cpuMs(t.pid) - before) / Math.max(1, r["2xx"]));
              errors.set(t, errors.get(t)! + r.non2xx + r.errors + r.timeouts);
            }
          const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
          const nodeMean = mean(cpu.get(targets[1])!);
          for (const t of eligible) {
            const xs = cpu.get(t)!;
            rows.push(
              `| ${provider} | ${stream ? "yes" : "no"} | ${c} | ${t.name} | ${mean(xs).toFixed(2)} | ${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)} | ${(mean(xs) / nodeMean).toFixed(2)}x | ${peakRssMb(t.pid).toFixed(0)} | ${errors.get(t)} |`,
            );
          }
        }
  } finally {
    await host.dispose();
    await pass.stop();
    await nodeProxy.stop();
    await upstream.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
  return {
    markdown: [
      `The proxy benchmark's workload (48 KB request, 124 KB answer: 12,000 prompt ids, 500 output tokens with logprobs) from a zero-latency vLLM-shaped upstream. The Worker is bundled as wrangler would (test/worker/worker-host.ts) and run by Miniflare's workerd with an R2 binding for captures (its default stream mode: live). ${ROUNDS} rounds of ${CALLS} calls per row, targets alternating, after a warm-up; CPU ms per call = the process's user + system time / 2xx answers.`,
      "",
      "workerd's CPU is not a Workers bill: Cloudflare bills the isolate's CPU time, without the runtime's own I/O and HTTP work that /proc counts here, and Miniflare's R2 is a local SQLite and file store in the same process.",
      "",
      "| provider | streamed | conc. | target | CPU ms/call | spread | vs polar on Node | peak RSS MB | errors |",
      "|---|---|---|---|---|---|---|---|---|",
      ...rows,
    ].join("\n"),
  };
}

async function load(t: Target, w: Workload, connections: number, amount: number, token: string) {
  const key = t.name.startsWith("pass") ? "x" : token;
  return await autocannon({
    url: t.url + w.path,
    method: "POST",
    headers: { ...w.headers, ...keyHeader(w, key) },
    body: w.body,
    connections,
    amount,
    timeout: 60,
  });
}

const bench: Benchmark = { name: "worker", title: "The Worker build under workerd: CPU per call", run };
export default bench;

if (import.meta.url === `file://${process.argv[1]}`) console.log((await run()).markdown);

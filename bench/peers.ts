// Peers: the same calls through a bare pass-through, our proxy (capturing to a directory store)
// and LiteLLM's proxy (scripts/setup-litellm.sh; skipped with the reason when absent), non-streamed
// and streamed, Chat Completions and Anthropic Messages in, against the zero-latency vLLM-shaped
// upstream. Every target is its own process; CPU per call comes from /proc, rounds alternate order.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { mintSessionToken } from "../shared/session-token.ts";
import type { Benchmark } from "./benchmark.ts";
import { type Child, freePort, startChild } from "./support/children.ts";
import { startLiteLlm } from "./support/litellm-process.ts";
import { cpuMs, peakRssMb } from "./support/process-stats.ts";
import { type Workload, workload } from "./support/workloads.ts";

const CALLS = Number(process.env.BENCH_PEER_CALLS ?? 100);
const ROUNDS = Number(process.env.BENCH_PEER_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_PEER_CONNECTIONS ?? 4);
const WORKLOADS = [
  ["openai_chat", false],
  ["openai_chat", true],
  ["anthropic", false],
  ["anthropic", true],
] as const;
const node = process.execPath;
const root = new URL("..", import.meta.url).pathname;
const listening = (line: string) => /listening/.test(line);

interface Target {
  name: string;
  url: string;
  child: Child;
  key: string;
}

function keyHeader(w: Workload, key: string): Record<string, string> {
  if (w.provider === "anthropic") return { "x-api-key": key };
  return { authorization: `Bearer ${key}` };
}

/** The pass-through forwards bytes, so it only takes what the engine speaks: Chat Completions. */
const serves = (t: Target, w: Workload) => t.name !== "pass-through" || w.provider === "openai_chat";

async function run(): Promise<{ markdown: string }> {
  const upPort = await freePort();
  const upstream = await startChild(node, [join(root, "bench/support/fake-vllm.ts"), String(upPort)], {
    ready: listening,
  });
  const upUrl = `http://127.0.0.1:${upPort}`;
  const storeDir = mkdtempSync(join(os.tmpdir(), "polar-bench-peers-"));
  const signingKey = "bench-signing-key-0123456789abcdef";
  const targets: Target[] = [];
  let skipped = "";
  try {
    const passPort = await freePort();
    targets.push({
      name: "pass-through",
      url: `http://127.0.0.1:${passPort}`,
      child: await startChild(node, [join(root, "bench/support/pass-through.ts"), upUrl, String(passPort)], {
        ready: listening,
      }),
      key: "x",
    });
    const polarPort = await freePort();
    targets.push({
      name: "polar (capture to dir store)",
      url: `http://127.0.0.1:${polarPort}`,
      child: await startChild(
        node,
        [join(root, "bench/support/polar-proxy-process.ts"), upUrl, String(polarPort), storeDir],
        { env: { ...process.env, POLAR_SIGNING_KEY: signingKey }, ready: listening },
      ),
      key: await mintSessionToken(
        { sessionId: "bench-peers", taskId: "bench", ttlSeconds: 86_400 },
        signingKey,
      ),
    });
    const models = [...new Set(WORKLOADS.map(([p, s]) => JSON.parse(workload(p, s, "x").body).model))];
    const ll = await startLiteLlm(upUrl, models);
    if ("skipped" in ll) skipped = ll.skipped;
    else targets.push({ name: "LiteLLM proxy", url: ll.url, child: ll.child, key: "bench" });

    const rows: string[] = [];
    for (const [provider, stream] of WORKLOADS) {
      const w = workload(provider, stream, "x");
      const eligible = targets.filter((t) => serves(t, w));
      const cpu = new Map<Target, number[]>(eligible.map((t) => [t, []]));
      const errors = new Map<Target, number>(eligible.map((t) => [t, 0]));
      for (const t of eligible) await load(t, w, Math.max(CONNECTIONS, 10)); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        for (const t of round % 2 === 0 ? eligible : [...eligible].reverse()) {
          const before = cpuMs(t.child.pid);
          const r = await load(t, w, CALLS);
          cpu.get(t)!.push((cpuMs(t.child.pid) - before) / Math.max(1, r["2xx"]));
          errors.set(t, errors.get(t)! + r.non2xx + r.errors + r.timeouts);
        }
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const pass = eligible.find((t) => t.name === "pass-through");
      const polar = eligible.find((t) => t.name.startsWith("polar"));
      for (const t of eligible) {
        const xs = cpu.get(t)!;
        const m = mean(xs);
        const vs = (other: Target | undefined) =>
          other ? `${(m / mean(cpu.get(other)!)).toFixed(1)}x` : "-";
        rows.push(
          `| ${provider === "anthropic" ? "Anthropic Messages" : "Chat Completions"} | ${stream ? "yes" : "no"} | ${t.name} | ${m.toFixed(2)} | ${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)} | ${vs(pass)} | ${vs(polar)} | ${peakRssMb(t.child.pid).toFixed(0)} | ${errors.get(t)} |`,
        );
      }
    }
    const notes = [
      `Upstream: the zero-latency vLLM-shaped responder of the proxy benchmark (48 KB request; 124 KB answer with 12,000 prompt ids and 500 output tokens with logprobs). Each row: ${ROUNDS} rounds of ${CALLS} calls, ${CONNECTIONS} at a time, targets in alternating order, after a warm-up; CPU ms per call = the target process's user + system time / 2xx answers (mean, and the spread over rounds).`,
      "",
      "What the columns compare is not the same work: the pass-through forwards bytes (Chat Completions only, the engine's own API); **LiteLLM does not capture tokens** (no prompt/response token ids or logprobs are kept, nothing is written); our proxy decodes the provider API, asks the engine for token ids and logprobs, builds, compresses and stores the capture before it answers.",
      "",
      skipped
        ? `LiteLLM skipped: ${skipped}.`
        : `LiteLLM: ${"`"}.venv-litellm${"`"} (scripts/setup-litellm.sh), one worker, offline (no cost-map fetch, no telemetry, outbound proxies pointed at a closed port), model \`hosted_vllm/policy\`.`,
      "",
      "| API in | streamed | target | CPU ms/call | spread | vs pass-through | vs polar | peak RSS MB | errors |",
      "|---|---|---|---|---|---|---|---|---|",
      ...rows,
    ];
    return { markdown: notes.join("\n") };
  } finally {
    for (const t of targets) await t.child.stop();
    await upstream.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

async function load(t: Target, w: Workload, amount: number) {
  return await autocannon({
    url: t.url + w.path,
    method: "POST",
    headers: { ...w.headers, ...keyHeader(w, t.key) },
    body: w.body,
    connections: CONNECTIONS,
    amount,
    timeout: 60,
  });
}

const bench: Benchmark = {
  name: "peers",
  title: "Peers: a bare pass-through, our proxy and LiteLLM's proxy on the same calls",
  run,
};
export default bench;

if (import.meta.url === `file://${process.argv[1]}`) console.log((await run()).markdown);

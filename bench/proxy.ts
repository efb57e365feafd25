// Proxy overhead: the same workload through the upstream directly, a bare pass-through forwarder,
// our proxy (capture to a directory store, to S3 on s3rver, and built but not written) and
// claude-code-router 2.0.0 (Anthropic -> OpenAI only). Every target is its own process; the load
// generator (autocannon) runs in this one. Targets alternate order between rounds.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import autocannon, { type Result } from "autocannon";
import { mintSessionToken } from "../shared/session-token.ts";
import type { Benchmark } from "./benchmark.ts";
import { asChild, type Child, freePort, startChild, track } from "./support/children.ts";
import { cpuMs, peakRssMb } from "./support/process-stats.ts";
import { startS3 } from "./support/start-s3.ts";
import { type Workload, workload } from "./support/workloads.ts";

const ALL_PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "google"] as const;
// BENCH_PROVIDERS=anthropic,google narrows a run (for quick looks); the recorded run uses all four.
const PROVIDERS = ALL_PROVIDERS.filter(
  (p) => !process.env.BENCH_PROVIDERS || process.env.BENCH_PROVIDERS.split(",").includes(p),
);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? "1,64").split(",").map(Number);
// BENCH_TARGETS=pass,dir,discard,s3,ccr narrows the targets (the upstream is always measured).
const TARGETS = process.env.BENCH_TARGETS?.split(",");
const wanted = (name: string) => !TARGETS || TARGETS.includes(name);
// BENCH_STREAMS=false narrows to non-streamed (or true: streamed) calls.
const STREAMS = [false, true].filter(
  (s) => !process.env.BENCH_STREAMS || process.env.BENCH_STREAMS.split(",").includes(String(s)),
);
const ROUNDS = 2;
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 1);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 4);
const CCR_VERSION = "2.0.0";
const node = process.execPath;
const root = new URL("..", import.meta.url).pathname;

interface Target {
  name: string;
  url: string;
  child: Child;
  providers: readonly string[];
  key: string;
}

interface Sample {
  reqs: number;
  ok: number;
  errors: number;
  cpu: number;
  seconds: number;
  p50: number[];
  p99: number[];
}

const listening = (line: string) => /listening|http:\/\/127\.0\.0\.1:\d+/.test(line);

async function startUpstream(): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = await startChild(node, [join(root, "bench/support/fake-vllm.ts"), String(port)], {
    ready: listening,
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

async function startPolar(
  name: string,
  upstream: string,
  store: string,
  env: NodeJS.ProcessEnv,
): Promise<Target> {
  const port = await freePort();
  const child = await startChild(
    node,
    [join(root, "bench/support/polar-proxy-process.ts"), upstream, String(port), store],
    { env: { ...process.env, ...env }, ready: listening },
  );
  const key = await mintSessionToken(
    { sessionId: `bench-${port}`, taskId: "bench", ttlSeconds: 86_400 },
    env.POLAR_SIGNING_KEY!,
  );
  return { name, url: `http://127.0.0.1:${port}`, child, providers: PROVIDERS, key };
}

async function startCcr(upstream: string): Promise<Target | null> {
  const cache = join(os.homedir(), ".cache", "polar-bench", `ccr-${CCR_VERSION}`);
  const bin = join(cache, "node_modules", "@musistudio", "claude-code-router", "dist", "cli.js");
  if (!existsSync(bin)) {
    mkdirSync(cache, { recursive: true });
    try {
      execFileSync(
        "npm",
        ["install", "--prefix", cache, "--no-save", `@musistudio/claude-code-router@${CCR_VERSION}`],
        {
          stdio: "ignore",
        },
      );
    } catch (err) {
      console.error(`bench: claude-code-router ${CCR_VERSION} could not be installed: ${err}`);
      return null;
    }
  }
  const home = mkdtempSync(join(os.tmpdir(), "polar-bench-ccr-home-"));
  const port = await freePort();
  mkdirSync(join(home, ".claude-code-router"), { recursive: true });
  writeFileSync(
    join(home, ".claude-code-router", "config.json"),
    JSON.stringify({
      LOG: false,
      HOST: "127.0.0.1",
      PORT: port,
      NON_INTERACTIVE_MODE: true,
      Providers: [
        {
          name: "vllm",
          api_base_url: `${upstream}/v1/chat/completions`,
          api_key: "bench",
          models: ["policy"],
        },
      ],
      Router: { default: "vllm,policy" },
    }),
  );
  try {
    // ccr prints nothing reliable when ready: poll its port instead.
    const child = await startPolling(node, [bin, "start"], { ...process.env, HOME: home, CI: "true" }, port);
    return {
      name: "claude-code-router",
      url: `http://127.0.0.1:${port}`,
      child,
      providers: ["anthropic"],
      key: "bench",
    };
  } catch (err) {
    console.error(`bench: claude-code-router did not start: ${err}`);
    return null;
  }
}

async function startPolling(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  port: number,
): Promise<Child> {
  const { spawn } = await import("node:child_process");
  const proc = track(spawn(cmd, args, { env, stdio: "ignore" }));
  const child = asChild(proc);
  for (let i = 0; i < 150; i++) {
    if (proc.exitCode !== null) throw new Error(`${cmd} ${args.join(" ")} exited with ${proc.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      await res.arrayBuffer();
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await child.stop();
  throw new Error(`${cmd} did not listen on ${port} within 30 s`);
}

async function load(target: Target, w: Workload, connections: number, seconds: number): Promise<Result> {
  return await autocannon({
    url: target.url + w.path,
    method: "POST",
    headers: { ...w.headers, ...keyHeader(w, target.key) },
    body: w.body,
    connections,
    duration: seconds,
    timeout: 30,
  });
}

function keyHeader(w: Workload, key: string): Record<string, string> {
  if (w.provider === "anthropic") return { "x-api-key": key };
  if (w.provider === "google") return { "x-goog-api-key": key };
  return { authorization: `Bearer ${key}` };
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function run(): Promise<{ markdown: string }> {
  const upstream = await startUpstream();
  const s3 = wanted("s3") ? await startS3() : null;
  const storeDir = mkdtempSync(join(os.tmpdir(), "polar-bench-store-"));
  const signingKey = "bench-signing-key-0123456789abcdef";
  const env = { POLAR_SIGNING_KEY: signingKey };
  const s3env = {
    ...env,
    AWS_ENDPOINT_URL_S3: s3?.endpoint ?? "",
    AWS_ACCESS_KEY_ID: "S3RVER",
    AWS_SECRET_ACCESS_KEY: "S3RVER",
    AWS_REGION: "us-east-1",
  };
  const direct: Target = {
    name: "upstream directly",
    url: upstream.url,
    child: upstream.child,
    providers: PROVIDERS,
    key: "x",
  };
  const passPort = await freePort();
  const pass: Target | null = !wanted("pass")
    ? null
    : {
        name: "pass-through",
        url: `http://127.0.0.1:${passPort}`,
        child: await startChild(
          node,
          [join(root, "bench/support/pass-through.ts"), upstream.url, String(passPort)],
          {
            ready: listening,
          },
        ),
        providers: PROVIDERS,
        key: "x",
      };
  const ours = wanted("dir") ? await startPolar("polar (dir store)", upstream.url, storeDir, env) : null;
  const oursS3 =
    s3 && (await startPolar("polar (S3 store)", upstream.url, "s3://polar-bench/captures-bench", s3env));
  const oursOff = wanted("discard")
    ? await startPolar("polar (capture not written)", upstream.url, "discard", env)
    : null;
  const ccr = wanted("ccr") ? await startCcr(upstream.url) : null;
  console.error(`bench: targets up (${ccr ? "with" : "without"} claude-code-router)`);
  const targets = [direct, pass, ours, oursS3, oursOff, ccr].filter((t): t is Target => t !== null);

  const lines: string[] = [];
  const summary: string[] = [];
  try {
    for (const provider of PROVIDERS) {
      for (const stream of STREAMS) {
        const w = workload(provider, stream, "x");
        lines.push(
          "",
          `### ${provider}, ${stream ? "streamed" : "non-streamed"} (${(w.body.length / 1024).toFixed(0)} KB request)`,
          "",
          "| target | conc. | req/s | p50 ms | p99 ms | added p50 ms | CPU ms/req | peak RSS MB | errors |",
          "|---|---|---|---|---|---|---|---|---|",
        );
        for (const c of CONCURRENCY) {
          const eligible = targets.filter((t) => t.providers.includes(provider));
          const samples = new Map<Target, Sample>(
            eligible.map((t) => [t, { reqs: 0, ok: 0, errors: 0, cpu: 0, seconds: 0, p50: [], p99: [] }]),
          );
          for (let round = 0; round < ROUNDS; round++) {
            const order = round % 2 === 0 ? eligible : [...eligible].reverse();
            for (const t of order) {
              await load(t, w, c, WARMUP_S);
              const before = cpuMs(t.child.pid);
              const r = await load(t, w, c, DURATION_S);
              const s = samples.get(t)!;
              s.cpu += cpuMs(t.child.pid) - before;
              s.ok += r["2xx"];
              s.reqs += r.requests.total;
              s.errors += r.errors + r.non2xx + r.timeouts;
              s.seconds += r.duration;
              s.p50.push(r.latency.p50);
              s.p99.push(r.latency.p99);
            }
          }
          const base = median(samples.get(direct)!.p50);
          for (const [t, s] of samples) {
            const rps = s.ok / s.seconds;
            lines.push(
              `| ${t.name} | ${c} | ${fmt(rps, 0)} | ${fmt(median(s.p50))} | ${fmt(median(s.p99))} | ${t === direct ? "-" : fmt(median(s.p50) - base)} | ${fmt(s.cpu / Math.max(1, s.ok), 2)} | ${fmt(peakRssMb(t.child.pid), 0)} | ${s.errors} |`,
            );
          }
          const cpuPer = (t: Target | null) =>
            t && samples.has(t) ? samples.get(t)!.cpu / Math.max(1, samples.get(t)!.ok) : Number.NaN;
          const rpsOf = (t: Target | null) =>
            t && samples.has(t) ? samples.get(t)!.ok / samples.get(t)!.seconds : Number.NaN;
          const cpuVsPass = (t: Target | null) => `${fmt(cpuPer(t) / cpuPer(pass), 1)}x`;
          const slowerThanPass = (t: Target | null) => `${fmt(rpsOf(pass) / rpsOf(t), 1)}x`;
          const rss = (t: Target | null) => (t ? fmt(peakRssMb(t.child.pid), 0) : "n/a");
          summary.push(
            `| ${provider} | ${stream ? "yes" : "no"} | ${c} | ${fmt(cpuPer(ours), 2)} | ${cpuVsPass(ours)} | ${cpuVsPass(oursS3 || null)} | ${slowerThanPass(ours)} | ${slowerThanPass(oursS3 || null)} | ${rss(ours)} / ${rss(oursS3 || null)} | ${ccr && samples.has(ccr) ? `${fmt(rpsOf(ours) / rpsOf(ccr), 1)}x` : "-"} |`,
          );
        }
      }
    }
  } finally {
    for (const t of targets) await t.child.stop();
    await s3?.child.stop();
  }

  const captureFiles = listFiles(join(storeDir, "captures"));
  const bytes = captureFiles.reduce((n, f) => n + statSync(f).size, 0);
  const tokensPerCapture = 12_000 + 500;
  rmSync(storeDir, { recursive: true, force: true });

  return {
    markdown: [
      `Upstream: zero-latency vLLM-shaped responder (124 KB answer: 12,000 prompt ids, 500 output tokens with logprobs).`,
      `Load: autocannon in the bench process, ${WARMUP_S} s warm-up discarded, ${ROUNDS} rounds of ${DURATION_S} s per target, order alternated; CPU ms/req = target process CPU time / 2xx responses.`,
      "",
      "### Summary: our proxy with capture, against the bare pass-through in the same run",
      "",
      "Issue 28's targets (non-streamed): CPU per call at most 2x the pass-through's, throughput at 64 clients within 1.5x of the pass-through's (the `pass-through req/s ÷ ours` columns), peak RSS under 300 MB with 64 clients. Peak RSS is the process's high-water mark so far (VmHWM), so a row also carries the peaks of the rows measured before it.",
      "",
      "| provider | streamed | conc. | dir CPU ms/req | dir CPU vs pass-through | S3 CPU vs pass-through | pass-through req/s ÷ dir | pass-through req/s ÷ S3 | peak RSS MB dir / S3 | throughput vs claude-code-router |",
      "|---|---|---|---|---|---|---|---|---|---|",
      ...summary,
      "",
      "### Capture cost",
      "",
      `${captureFiles.length} captures in the directory store, ${fmt(bytes / Math.max(1, captureFiles.length) / 1024, 1)} KB each on average, ` +
        `${fmt(bytes / Math.max(1, captureFiles.length * tokensPerCapture), 2)} bytes per captured token (12,500 tokens each; the request body is included). ` +
        "Capture write cost: compare the `polar (dir store)` and `polar (capture not written)` rows; building and encoding the capture is measured by the `capture` benchmark.",
      ...lines,
    ].join("\n"),
  };
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
}

const bench: Benchmark = { name: "proxy", title: "Proxy overhead", run };
export default bench;

if (import.meta.url === `file://${process.argv[1]}`) console.log((await run()).markdown);

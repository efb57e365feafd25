// Cost growth: proxy CPU per call against request size (10 KB to 1 MB) and answer length (50 to
// 8,000 tokens), stored bytes per captured token along both, and reconstruction time and memory
// against session length (10 to 1,000 turns). Tables here, log-log plots as PNGs in docs/bench/.
// The upstream is fake-vllm in scaled mode: one prompt id per 4 request bytes, `max_tokens` output
// tokens with logprobs; a bare pass-through on the same calls is the floor.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { encodeCapture } from "../shared/capture-codec.ts";
import { keys } from "../shared/keys.ts";
import { DirectoryStore } from "../shared/node/directory-store.ts";
import { mintSessionToken } from "../shared/session-token.ts";
import type { Benchmark } from "./benchmark.ts";
import { session } from "./reconstruction.ts";
import { type Child, freePort, startChild } from "./support/children.ts";
import { type Chart, writePngs } from "./support/plot.ts";
import { cpuMs } from "./support/process-stats.ts";
import { anthropicBody } from "./support/workloads.ts";

const REQUEST_KB = [10, 30, 100, 300, 1000];
const ANSWER_TOKENS = [50, 200, 1000, 4000, 8000];
const TURNS = [10, 30, 100, 300, 1000];
const ROUNDS = 2;
/** Calls per round: fewer for the big shapes, so each row takes seconds, not minutes. */
const callsFor = (kb: number, tokens: number) =>
  Math.max(
    20,
    Math.round(Number(process.env.BENCH_GROWTH_CALLS ?? 100) * Math.min(1, 100 / kb, 1000 / tokens)),
  );
const CONNECTIONS = 4;
const node = process.execPath;
const root = new URL("..", import.meta.url).pathname;
const listening = (line: string) => /listening/.test(line);
const KEY = "bench-growth-signing-key";
const VOCAB = "the file tool use when path command output must absolute lines parser test suite fails".split(
  " ",
);

/** A Claude-Code-shaped body padded with a tool result of pseudo-random words to about `kb` KB. */
function bodyOf(kb: number, maxTokens: number): string {
  const base = anthropicBody(false) as { messages: Array<{ content: unknown }>; max_tokens: number };
  base.max_tokens = maxTokens;
  const bare = JSON.stringify(base).length;
  let seed = 7;
  const words: string[] = [];
  for (let n = bare; n < kb * 1000; ) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const w = VOCAB[seed % VOCAB.length] + (seed % 5 === 0 ? `${seed % 1000}` : "");
    words.push(w);
    n += w.length + 1;
  }
  base.messages.push({ role: "user", content: [{ type: "text", text: words.join(" ") }] } as never);
  return JSON.stringify(base);
}

interface Row {
  kb: number;
  tokens: number;
  polar: number[];
  pass: number[];
  storedBytesPerToken: number;
}

async function sweep(
  shapes: Array<{ kb: number; tokens: number }>,
  polar: { url: string; child: Child },
  pass: { url: string; child: Child },
  storeDir: string,
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const { kb, tokens } of shapes) {
    const body = bodyOf(kb, tokens);
    const sessionId = `growth-${kb}-${tokens}`;
    const token = await mintSessionToken({ sessionId, taskId: "bench", ttlSeconds: 86_400 }, KEY);
    const hit = (url: string, key: string, amount: number) =>
      autocannon({
        url: `${url}/v1/messages`,
        method: "POST",
        headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": key },
        body,
        connections: CONNECTIONS,
        amount,
        timeout: 60,
      });
    const row: Row = { kb, tokens, polar: [], pass: [], storedBytesPerToken: Number.NaN };
    await hit(polar.url, token, 8);
    await hit(pass.url, "x", 8);
    const calls = callsFor(kb, tokens);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (["polar", "pass"] as const) : (["pass", "polar"] as const);
      for (const which of order) {
        const t = which === "polar" ? polar : pass;
        const before = cpuMs(t.child.pid);
        const r = await hit(t.url, which === "polar" ? token : "x", calls);
        if (r.non2xx + r.errors > 0)
          throw new Error(`${which} ${kb} KB / ${tokens} tokens: ${r.non2xx} non-2xx, ${r.errors} errors`);
        row[which].push((cpuMs(t.child.pid) - before) / r["2xx"]);
      }
    }
    const dir = join(storeDir, keys.capturesOfSession("bench", sessionId));
    const files = readdirSync(dir).map((f) => statSync(join(dir, f)).size);
    const tokensPerCapture = Math.round(body.length / 4) + tokens;
    row.storedBytesPerToken = files.reduce((a, b) => a + b, 0) / files.length / tokensPerCapture;
    rows.push(row);
  }
  return rows;
}

interface ReconRow {
  turns: number;
  tokens: number;
  ms: number;
  peakGrowthMb: number;
}

async function reconstructionRows(): Promise<ReconRow[]> {
  const rows: ReconRow[] = [];
  for (const turns of TURNS) {
    const dir = mkdtempSync(join(os.tmpdir(), "polar-bench-recon-"));
    try {
      const store = new DirectoryStore(dir);
      const captures = session(turns);
      for (const c of captures)
        await store.put(keys.capture("bench", "bench", c.capture_id), await encodeCapture(c));
      const tokens = captures.reduce(
        (n, c) => n + (c.prompt_token_ids?.length ?? 0) + (c.response_token_ids?.length ?? 0),
        0,
      );
      // Fastest of 3 fresh processes: each one's peak RSS is its own.
      let best: ReconRow | null = null;
      for (let i = 0; i < 3; i++) {
        const out = await runOnce(dir);
        if (!best || out.ms < best.ms) best = { turns, tokens, ms: out.ms, peakGrowthMb: out.peakGrowthMb };
      }
      rows.push(best!);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}

async function runOnce(dir: string): Promise<{ ms: number; peakGrowthMb: number }> {
  const { execFile } = await import("node:child_process");
  return await new Promise((resolve, reject) =>
    execFile(
      node,
      [join(root, "bench/support/reconstruct-once.ts"), dir],
      { maxBuffer: 1 << 20 },
      (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim().split("\n").at(-1)!))),
    ),
  );
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;

async function run(): Promise<{ markdown: string }> {
  const upPort = await freePort();
  const upstream = await startChild(node, [join(root, "bench/support/fake-vllm.ts"), String(upPort)], {
    env: { ...process.env, FAKE_VLLM_SCALED: "1" },
    ready: listening,
  });
  const upUrl = `http://127.0.0.1:${upPort}`;
  const storeDir = mkdtempSync(join(os.tmpdir(), "polar-bench-growth-"));
  const passPort = await freePort();
  const polarPort = await freePort();
  const children: Child[] = [upstream];
  let sizeRows: Row[];
  let answerRows: Row[];
  try {
    const pass = {
      url: `http://127.0.0.1:${passPort}`,
      child: await startChild(node, [join(root, "bench/support/pass-through.ts"), upUrl, String(passPort)], {
        ready: listening,
      }),
    };
    children.push(pass.child);
    const polar = {
      url: `http://127.0.0.1:${polarPort}`,
      child: await startChild(
        node,
        [join(root, "bench/support/polar-proxy-process.ts"), upUrl, String(polarPort), storeDir],
        { env: { ...process.env, POLAR_SIGNING_KEY: KEY }, ready: listening },
      ),
    };
    children.push(polar.child);
    sizeRows = await sweep(
      REQUEST_KB.map((kb) => ({ kb, tokens: 500 })),
      polar,
      pass,
      storeDir,
    );
    answerRows = await sweep(
      ANSWER_TOKENS.map((tokens) => ({ kb: 48, tokens })),
      polar,
      pass,
      storeDir,
    );
  } finally {
    for (const c of children) await c.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
  const recon = await reconstructionRows();

  const pngDir = join(root, "docs", "bench");
  mkdirSync(pngDir, { recursive: true });
  const charts: Array<{ chart: Chart; path: string }> = [
    {
      path: join(pngDir, "growth-request-size.png"),
      chart: {
        title: "Proxy CPU per call vs request size (500-token answer)",
        x: "request KB",
        y: "CPU ms per call",
        series: [
          { name: "polar (capture)", points: sizeRows.map((r) => [r.kb, mean(r.polar)]) },
          { name: "pass-through", points: sizeRows.map((r) => [r.kb, mean(r.pass)]) },
        ],
      },
    },
    {
      path: join(pngDir, "growth-answer-length.png"),
      chart: {
        title: "Proxy CPU per call vs answer length (48 KB request)",
        x: "answer tokens",
        y: "CPU ms per call",
        series: [
          { name: "polar (capture)", points: answerRows.map((r) => [r.tokens, mean(r.polar)]) },
          { name: "pass-through", points: answerRows.map((r) => [r.tokens, mean(r.pass)]) },
        ],
      },
    },
    {
      path: join(pngDir, "growth-reconstruction.png"),
      chart: {
        title: "Reconstruction from the store vs session length",
        x: "turns",
        y: "ms / MiB",
        series: [
          { name: "time (ms)", points: recon.map((r) => [r.turns, r.ms]) },
          { name: "peak RSS growth (MiB)", points: recon.map((r) => [r.turns, r.peakGrowthMb]) },
          { name: "captured Mtokens x 100", points: recon.map((r) => [r.turns, r.tokens / 1e4]) },
        ],
      },
    },
  ];
  const noPng = await writePngs(charts);

  const proxyTable = (rows: Row[], key: "kb" | "tokens") => [
    `| ${key === "kb" ? "request KB" : "answer tokens"} | polar CPU ms/call | spread | pass-through CPU ms/call | polar / pass-through | polar CPU µs per KB of request + answer | stored bytes per captured token |`,
    "|---:|---:|---|---:|---:|---:|---:|",
    ...rows.map((r) => {
      // Bytes the proxy handles: the request, and the engine's answer (~190 bytes per output token with one logprob entry, ~7 per prompt id).
      const kbHandled = r.kb + (r.tokens * 190 + (r.kb * 1000 * 7) / 4) / 1000;
      return `| ${key === "kb" ? r.kb : r.tokens} | ${mean(r.polar).toFixed(2)} | ${spread(r.polar)} | ${mean(r.pass).toFixed(2)} | ${(mean(r.polar) / mean(r.pass)).toFixed(1)}x | ${((mean(r.polar) * 1000) / kbHandled).toFixed(1)} | ${r.storedBytesPerToken.toFixed(2)} |`;
    }),
  ];
  const lines = [
    `Upstream: bench/support/fake-vllm.ts with FAKE_VLLM_SCALED=1 (one prompt id per 4 request bytes; \`max_tokens\` output tokens with logprobs). Requests: the Claude-Code-shaped Anthropic body of the proxy benchmark padded with a tool result of pseudo-random words. Each row: ${ROUNDS} rounds (alternating order) of up to ${Number(process.env.BENCH_GROWTH_CALLS ?? 100)} calls (fewer for the largest shapes, at least 20), ${CONNECTIONS} at a time; CPU from /proc; our proxy writes captures to a directory store.`,
    "",
    "![CPU per call vs request size](docs/bench/growth-request-size.png) ![CPU per call vs answer length](docs/bench/growth-answer-length.png)",
    "",
    "### Against request size (500-token answer)",
    "",
    ...proxyTable(sizeRows, "kb"),
    "",
    "### Against answer length (48 KB request, about 12,000 prompt ids)",
    "",
    ...proxyTable(answerRows, "tokens"),
    "",
    "Linear means a flat `µs per KB` column once the fixed per-call cost (HTTP, auth, routing, the store's file) is small beside the bytes; stored bytes per captured token should stay flat or fall.",
    "",
    "### Reconstruction against session length",
    "",
    "![Reconstruction vs session length](docs/bench/growth-reconstruction.png)",
    "",
    "Sessions of bench/reconstruction.ts (context growing to 30,000 tokens over N turns, every call capturing its whole prompt, so captured tokens grow with N), written to a directory store; each row is the fastest of 3 fresh processes running `reconstructSession` (list, read, decode, build, check; bench/support/reconstruct-once.ts), with the peak RSS growth over the process's RSS before reading.",
    "",
    "| turns | captured tokens | ms | ns per captured token | peak RSS growth MiB | bytes per captured token |",
    "|---:|---:|---:|---:|---:|---:|",
    ...recon.map(
      (r) =>
        `| ${r.turns} | ${r.tokens.toLocaleString("en-US")} | ${r.ms.toFixed(0)} | ${((r.ms * 1e6) / r.tokens).toFixed(1)} | ${r.peakGrowthMb.toFixed(0)} | ${((r.peakGrowthMb * 2 ** 20) / r.tokens).toFixed(1)} |`,
    ),
    ...(noPng ? ["", `PNG plots not drawn: ${noPng}.`] : []),
  ];
  return { markdown: lines.join("\n") };
}

const bench: Benchmark = {
  name: "growth",
  title: "Cost growth: request size, answer length, session length",
  run,
};
export default bench;

if (import.meta.url === `file://${process.argv[1]}`) console.log((await run()).markdown);

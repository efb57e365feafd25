// Live vs synthesized streaming: per provider, a client's time to first byte and to last byte
// through the proxy in each stream mode, side by side with the upstream's own first byte, against
// `polar policy --tokens-per-second 50` answering 500 tokens. Proxy CPU per call is read from /proc
// for each proxy process (one per mode), so the ratio is measured in the same run.
import { mintSessionToken } from "../shared/session-token.ts";
import type { Benchmark } from "./benchmark.ts";
import { type Child, freePort, startChild } from "./support/children.ts";
import { cpuMs } from "./support/process-stats.ts";

const TOKENS_PER_SECOND = 50;
const ANSWER_TOKENS = 500;
const CALLS = Number(process.env.BENCH_STREAM_CALLS ?? 3);
const TTFB_CALLS = 5;
const KEY = "bench-streaming-key";
const node = process.execPath;
const root = new URL("..", import.meta.url).pathname;
// Far more text than 500 tokens: the answer is cut at max tokens, so every call has exactly 500.
const PROMPT = `Follow the script.\n\n\`\`\`polar-script\nsay: ${"The quick brown fox jumps over the lazy dog. ".repeat(200)}\n\`\`\`\n`;

const REQUESTS = {
  anthropic: {
    path: "/v1/messages",
    body: {
      model: "m",
      max_tokens: ANSWER_TOKENS,
      stream: true,
      messages: [{ role: "user", content: PROMPT }],
    },
  },
  openai_chat: {
    path: "/v1/chat/completions",
    body: {
      model: "m",
      max_tokens: ANSWER_TOKENS,
      stream: true,
      messages: [{ role: "user", content: PROMPT }],
    },
  },
  openai_responses: {
    path: "/v1/responses",
    body: { model: "m", max_output_tokens: ANSWER_TOKENS, stream: true, input: PROMPT },
  },
  google: {
    path: "/v1beta/models/m:streamGenerateContent?alt=sse",
    body: {
      contents: [{ role: "user", parts: [{ text: PROMPT }] }],
      generationConfig: { maxOutputTokens: ANSWER_TOKENS },
    },
  },
} as const;

interface Timing {
  ttfbMs: number;
  lastMs: number;
}

async function timedStream(url: string, body: unknown, token?: string): Promise<Timing> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}`, "x-api-key": token, "x-goog-api-key": token } : {}),
    },
    body: JSON.stringify(body),
  });
  if (!res.ok || !res.body) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  const reader = res.body.getReader();
  let ttfbMs = -1;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (ttfbMs < 0 && value && value.length > 0) ttfbMs = performance.now() - t0;
  }
  return { ttfbMs, lastMs: performance.now() - t0 };
}

/** `body` with its answer cut at `n` tokens, whichever field its API uses. */
function withMaxTokens(body: object, n: number): object {
  if ("max_output_tokens" in body) return { ...body, max_output_tokens: n };
  if ("generationConfig" in body) return { ...body, generationConfig: { maxOutputTokens: n } };
  return { ...body, max_tokens: n };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

async function startProxy(upstream: string, mode: "live" | "synthesize", dir: string): Promise<Child> {
  const port = await freePort();
  return startChild(node, [`${root}bench/support/polar-proxy-process.ts`, upstream, String(port), dir], {
    env: { ...process.env, POLAR_SIGNING_KEY: KEY, POLAR_BENCH_STREAM_MODE: mode },
    ready: (line) => line.startsWith("listening"),
  }).then((c) => Object.assign(c, { url: `http://127.0.0.1:${port}` }));
}

/**
 * The floors: a bare forwarder (bench/support/pass-through.ts) piping the engine's stream chunk by
 * chunk, or with `discard` only reading it to its end.
 */
async function startPassThrough(upstream: string, discard = false): Promise<Child & { url: string }> {
  const port = await freePort();
  const args = [`${root}bench/support/pass-through.ts`, upstream, String(port)];
  const child = await startChild(node, discard ? [...args, "--discard"] : args, {
    ready: (line) => line.startsWith("listening"),
  });
  return Object.assign(child, { url: `http://127.0.0.1:${port}` });
}

/** What the proxy sends the engine for a client stream in live mode (the pass-through gets the same). */
const ENGINE_STREAM_BODY = {
  ...REQUESTS.openai_chat.body,
  return_token_ids: true,
  logprobs: true,
  stream_options: { include_usage: true },
};

const bench: Benchmark = {
  name: "streaming",
  title: "Live vs synthesized streams: client time to first and last byte, proxy CPU per call",
  async run() {
    const policyPort = await freePort();
    const policy = await startChild(
      node,
      [
        `${root}bin/polar.js`,
        "policy",
        "--port",
        String(policyPort),
        "--tokens-per-second",
        String(TOKENS_PER_SECOND),
      ],
      { ready: (line) => line.includes("listening") },
    );
    const upstream = `http://127.0.0.1:${policyPort}`;
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const proxies = {
      live: (await startProxy(upstream, "live", mkdtempSync(`${tmpdir()}/polar-bench-live-`))) as Child & {
        url: string;
      },
      synthesize: (await startProxy(
        upstream,
        "synthesize",
        mkdtempSync(`${tmpdir()}/polar-bench-synth-`),
      )) as Child & {
        url: string;
      },
    };
    const passThrough = await startPassThrough(upstream);
    const readOnly = await startPassThrough(upstream, true);
    const rows: string[] = [];
    const cpuRows: string[] = [];
    const cpu = { live: 0, synthesize: 0, passThrough: 0, readOnly: 0 };
    let calls = 0;
    try {
      for (const [provider, req] of Object.entries(REQUESTS)) {
        const timings = { upstream: [] as Timing[], live: [] as Timing[], synthesize: [] as Timing[] };
        const providerCpu = { live: 0, synthesize: 0, passThrough: 0, readOnly: 0 };
        // One unmeasured call per provider first: module loading and JIT warm-up are not per-call costs.
        for (let i = -1; i < CALLS; i++) {
          const token = await mintSessionToken(
            { sessionId: `bench-${provider}-${i}`, taskId: "bench-streaming" },
            KEY,
          );
          const before = {
            live: cpuMs(proxies.live.pid),
            synthesize: cpuMs(proxies.synthesize.pid),
            passThrough: cpuMs(passThrough.pid),
            readOnly: cpuMs(readOnly.pid),
          };
          // All run side by side against the same paced policy, so they see the same pacing.
          const [up, live, synth] = await Promise.all([
            timedStream(`${upstream}/v1/chat/completions`, ENGINE_STREAM_BODY),
            timedStream(`${proxies.live.url}${req.path}`, req.body, token),
            timedStream(`${proxies.synthesize.url}${req.path}`, req.body, token),
            timedStream(`${passThrough.url}/v1/chat/completions`, ENGINE_STREAM_BODY),
            timedStream(`${readOnly.url}/v1/chat/completions`, ENGINE_STREAM_BODY),
          ]);
          if (i < 0) continue;
          providerCpu.live += cpuMs(proxies.live.pid) - before.live;
          providerCpu.synthesize += cpuMs(proxies.synthesize.pid) - before.synthesize;
          providerCpu.passThrough += cpuMs(passThrough.pid) - before.passThrough;
          providerCpu.readOnly += cpuMs(readOnly.pid) - before.readOnly;
          timings.upstream.push(up);
          timings.live.push(live);
          timings.synthesize.push(synth);
        }
        // First bytes one call at a time: a short answer straight from the policy, then through the proxy.
        const ttfb = { upstream: [] as number[], live: [] as number[] };
        const short = (body: object) => withMaxTokens(body, 5);
        for (let i = 0; i < TTFB_CALLS; i++) {
          const token = await mintSessionToken(
            { sessionId: `bench-ttfb-${provider}-${i}`, taskId: "bench-streaming" },
            KEY,
          );
          ttfb.upstream.push(
            (await timedStream(`${upstream}/v1/chat/completions`, short(ENGINE_STREAM_BODY))).ttfbMs,
          );
          ttfb.live.push(
            (await timedStream(`${proxies.live.url}${req.path}`, short(req.body), token)).ttfbMs,
          );
        }
        calls += CALLS;
        for (const k of ["live", "synthesize", "passThrough", "readOnly"] as const) cpu[k] += providerCpu[k];
        const m = (t: Timing[], k: keyof Timing) => fmt(median(t.map((x) => x[k])));
        rows.push(
          `| ${provider} | ${fmt(median(ttfb.upstream))} | ${fmt(median(ttfb.live))} | ${m(timings.synthesize, "ttfbMs")} | ${m(timings.upstream, "lastMs")} | ${m(timings.live, "lastMs")} | ${m(timings.synthesize, "lastMs")} |`,
        );
        const per = (k: keyof typeof providerCpu) => (providerCpu[k] / CALLS).toFixed(1);
        cpuRows.push(
          `| ${provider} | ${per("live")} ms | ${per("synthesize")} ms | ${per("passThrough")} ms | ${per("readOnly")} ms | ${(providerCpu.live / Math.max(providerCpu.synthesize, 0.001)).toFixed(2)} |`,
        );
      }
    } finally {
      await proxies.live.stop();
      await proxies.synthesize.stop();
      await passThrough.stop();
      await readOnly.stop();
      await policy.stop();
    }
    const perCall = {
      live: cpu.live / calls,
      synthesize: cpu.synthesize / calls,
      passThrough: cpu.passThrough / calls,
      readOnly: cpu.readOnly / calls,
    };
    const markdown = `## Streaming: live vs synthesized

\`npm run bench -- streaming\` (bench/streaming.ts): \`polar policy --tokens-per-second ${TOKENS_PER_SECOND}\`,
answers of ${ANSWER_TOKENS} tokens (cut at max tokens), ${CALLS} call(s) per provider and mode, median. Each
call goes at the same time to the policy directly (Chat, its own first byte), a proxy in \`live\` mode
and a proxy in \`synthesize\` mode (each its own process, directory store). One token interval is
${1000 / TOKENS_PER_SECOND} ms.

| provider | upstream TTFB | live TTFB | synthesize TTFB | upstream last byte | live last byte | synthesize last byte |
| --- | --- | --- | --- | --- | --- | --- |
${rows.join("\n")}

Proxy CPU per call (user + system, from /proc, warm-up call excluded), beside a bare pass-through
(bench/support/pass-through.ts) piping the same engine stream to a client chunk by chunk, and the
same forwarder with \`--discard\` only reading the engine stream to its end (read only):

| provider | live | synthesize | pass-through | read only | live / synthesize |
| --- | --- | --- | --- | --- | --- |
${cpuRows.join("\n")}
| all | ${perCall.live.toFixed(1)} ms | ${perCall.synthesize.toFixed(1)} ms | ${perCall.passThrough.toFixed(1)} ms | ${perCall.readOnly.toFixed(1)} ms | ${(perCall.live / Math.max(perCall.synthesize, 0.001)).toFixed(2)} |

The engine sends one chunk per sampled token (${ANSWER_TOKENS} per call): reading them is a cost a
synthesized stream never pays (it reads one JSON answer): the read-only column is that floor, with
no parsing, no capture and no write to the client; \`live / synthesize\` cannot drop below
\`read only / synthesize\` on this machine.
Live mode writes to the client at most every 100 ms (\`DEFAULT_STREAM_FLUSH_MS\`), the first byte and the end at once.
TTFB comes from a separate pass (${TTFB_CALLS} short calls per provider, one at a time): the upstream's own first
byte, then the live proxy's, so neither waits behind the other's prefill in the single-threaded policy.`;
    return { markdown };
  },
};

export default bench;

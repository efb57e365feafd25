// The irreducible steps of one non-streamed call with capture, each timed alone in this process
// (CPU ms per call, user + system, median of 5 batches of N): what the proxy must do beyond a
// bare forwarder. `node bench/support/hot-path-floor.ts [N=300]`. Inputs are the proxy
// benchmark's: the 48 KB Anthropic request and the 124 KB answer of fake-vllm (run here in-process
// through its module's answer), a stored capture from a real run of our proxy.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeAnthropicRequest } from "../../proxy-worker/codecs/anthropic/convert-request.ts";
import { engineAdapters } from "../../proxy-worker/engines/registry.ts";
import { encodeCaptureWith } from "../../shared/capture-codec.ts";
import type { GzipPart } from "../../shared/encoding/gzip.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { gzipPartsSync } from "../../shared/node/gzip-parts.ts";
import { freePort, startChild } from "./children.ts";
import { workload } from "./workloads.ts";

const n = Number(process.argv[2] ?? 300);
const root = new URL("../..", import.meta.url).pathname;

function cpuOf(fn: () => unknown): number {
  for (let i = 0; i < 30; i++) fn();
  const batches: number[] = [];
  for (let b = 0; b < 5; b++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) fn();
    const c = process.cpuUsage(c0);
    batches.push((c.user + c.system) / 1000 / n);
  }
  return batches.sort((a, b) => a - b)[2];
}

// The engine's answer as fake-vllm sends it (one request to a fake-vllm child).
const port = await freePort();
const fake = await startChild(process.execPath, [join(root, "bench/support/fake-vllm.ts"), String(port)], {
  ready: (l) => /listening/.test(l),
});
const chat = workload("openai_chat", false, "x");
const answerText = await (
  await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: "POST", body: chat.body })
).text();
await fake.stop();

const w = workload("anthropic", false, "x");
const requestBytes = new TextEncoder().encode(w.body);
const decoder = new TextDecoder("utf-8", { fatal: true });
const decoded = decodeAnthropicRequest(JSON.parse(w.body), {
  path: "/v1/messages",
  query: new URLSearchParams(),
  pathModel: null,
  pathStream: false,
} as never);
const reading = engineAdapters.vllm.readResponse(JSON.parse(answerText), false);
const record = {
  v: 1 as const,
  capture_id: "01BENCHFLOOR0000000000000",
  session_id: "s",
  task_id: "t",
  attempt: 1,
  started_at: new Date(0).toISOString(),
  ended_at: new Date(1).toISOString(),
  provider: "anthropic" as const,
  path: "/v1/messages",
  stream: false,
  model_requested: "claude-sonnet-4-5",
  model_served: "policy",
  request: JSON.parse(w.body),
  chat_request: decoded.chat,
  upstream_request: null,
  response: reading.forCapture,
  prompt_token_ids: reading.promptTokenIds,
  response_token_ids: reading.responseTokenIds,
  response_logprobs: reading.responseLogprobs,
  finish_reason: "stop",
  usage: null,
  policy_version: null,
  policy_version_end: null,
  policy_version_source: null,
  sampling: null,
  parallel_tool_calls_disabled: false,
  stream_status: "complete" as const,
  tito: null,
  parent_capture_id: null,
  replica: null,
  error: null,
};
let parts: GzipPart[] = [];
await encodeCaptureWith(record as never, {
  requestJson: requestBytes,
  gzip: async (p) => {
    parts = [...p];
    return new Uint8Array();
  },
});
const stored = gzipPartsSync(parts);
const dir = mkdtempSync(join(tmpdir(), "polar-floor-"));
const store = new DirectoryStore(dir);
let k = 0;
const rows: Array<[string, number]> = [
  [
    "request: UTF-8 decode + JSON.parse (48 KB) + Anthropic -> chat decode",
    cpuOf(() =>
      decodeAnthropicRequest(JSON.parse(decoder.decode(requestBytes)), {
        path: "/v1/messages",
        query: new URLSearchParams(),
        pathModel: null,
        pathStream: false,
      } as never),
    ),
  ],
  ["upstream body: JSON.stringify(chat request)", cpuOf(() => JSON.stringify(decoded.chat))],
  [`answer: JSON.parse (${(answerText.length / 1024).toFixed(0)} KB)`, cpuOf(() => JSON.parse(answerText))],
  [
    "answer: the vLLM reading after the parse (ids, logprobs, the answers for client and capture)",
    cpuOf(() => engineAdapters.vllm.readResponse(JSON.parse(answerText), false)) -
      cpuOf(() => JSON.parse(answerText)),
  ],
  [
    "capture: build parts (validate, share strings, pack ids)",
    cpuOf(() =>
      encodeCaptureWith(record as never, { requestJson: requestBytes, gzip: async () => new Uint8Array() }),
    ),
  ],
  [
    `capture: gzip (node:zlib level 1, ${(parts.reduce((a, p) => a + p.bytes.length, 0) / 1024).toFixed(0)} KB -> ${(stored.length / 1024).toFixed(0)} KB)`,
    cpuOf(() => gzipPartsSync(parts)),
  ],
  [
    "capture: directory store put (temp file + rename)",
    cpuOf(() => store.put(`captures/t/s/${String(k++).padStart(10, "0")}.json.gz`, stored)),
  ],
];
rmSync(dir, { recursive: true, force: true });
const total = rows.reduce((a, [, ms]) => a + ms, 0);
console.log("| step | CPU ms per call |\n|---|---:|");
for (const [name, ms] of rows) console.log(`| ${name} | ${ms.toFixed(3)} |`);
console.log(`| sum | ${total.toFixed(3)} |`);

// The per-call cost of the trainer's state in the store (docs/control-api.md "Where this state
// lives"): every model call reads control/replicas.json and control/policy-version.json after it
// arrives, and the version again at its end. Side by side in one run, the same calls through a
// proxy with the runtime routes on (the reads) and off (none), on a directory store and on S3
// (s3rver in its own process), in front of one dry-run policy: per-call latency, and how many
// store reads the calls shared (concurrent calls share one read begun after they arrived).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { MemoryQueue } from "../batch-runner/queue/memory-queue.ts";
import { memoryPolicyVersion } from "../proxy-worker/admin.ts";
import { SharedRuntimeState } from "../proxy-worker/control/shared-state.ts";
import { startNodeProxy } from "../proxy-worker/node.ts";
import { ReplicaSet } from "../proxy-worker/routing/replicas.ts";
import { openStore } from "../shared/node/open-store.ts";
import { mintSessionToken } from "../shared/session-token.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import type { Benchmark } from "./benchmark.ts";
import { startPolicyProcess } from "./support/policy-process.ts";
import { startS3 } from "./support/start-s3.ts";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SESSIONS = env("BENCH_SHARED_SESSIONS", 8);
const CALLS = env("BENCH_SHARED_CALLS", 40);
/** Sequential reads of the state alone, per store. */
const READS = env("BENCH_SHARED_READS", 300);
/** Calls per session before the measured ones (the proxy's first calls fetch the model's context length). */
const WARMUP = 3;
const KEY = "bench-shared-state-signing-key";

interface Row {
  store: string;
  shared: boolean;
  calls: number;
  p50: number;
  p95: number;
  mean: number;
  /** GETs of control/* keys per model call. */
  readsPerCall: number;
  seconds: number;
}

/** Counts the reads of the shared documents, passing everything through. */
function counted(store: ObjectStore): { store: ObjectStore; reads: () => number } {
  let reads = 0;
  const wrapped: ObjectStore = {
    put: (k, b, o) => store.put(k, b, o),
    putIfAbsent: (k, b, o) => store.putIfAbsent(k, b, o),
    get: (k) => {
      if (k.startsWith("control/")) reads++;
      return store.get(k);
    },
    list: (p) => store.list(p),
    delete: (k) => store.delete(k),
    capabilities: store.capabilities,
    url: store.url,
  };
  return { store: wrapped, reads: () => reads };
}

async function runOne(
  name: string,
  open: () => ObjectStore,
  shared: boolean,
  upstream: string,
): Promise<Row> {
  const { store, reads } = counted(open());
  const proxy = await startNodeProxy({
    upstreamUrl: upstream,
    store,
    port: 0,
    signingKey: KEY,
    log: () => {},
    ...(shared ? { control: { jobs: new MemoryQueue(), controlToken: "bench-control" } } : {}),
  });
  try {
    if (shared) {
      // A trainer's state is in the store, as on a fleet: both documents exist and are read.
      const headers = { authorization: "Bearer bench-control", "content-type": "application/json" };
      await fetch(`${proxy.url}/v1/policy-version`, { method: "PUT", headers, body: '{"version": 1}' });
      await fetch(`${proxy.url}/v1/replicas`, {
        method: "PUT",
        headers,
        body: JSON.stringify({ urls: [upstream] }),
      });
    }
    const before = reads();
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        const token = await mintSessionToken(
          { sessionId: `s${s}`, taskId: `task-${s % 4}`, ttlSeconds: 86_400 },
          KEY,
        );
        for (let i = -WARMUP; i < CALLS; i++) {
          const t0 = performance.now();
          const res = await fetch(`${proxy.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
            body: JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: `call ${i}` }] }),
          });
          await res.arrayBuffer();
          if (!res.ok) throw new Error(`${name}: call ${i} of s${s} answered ${res.status}`);
          if (i >= 0) latencies.push(performance.now() - t0);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    return {
      store: name,
      shared,
      calls: latencies.length,
      p50: at(0.5),
      p95: at(0.95),
      mean: latencies.reduce((a, b) => a + b, 0) / latencies.length,
      // Over every model call, warm-up ones included (they read like any other).
      readsPerCall: (reads() - before) / (SESSIONS * (CALLS + WARMUP)),
      seconds,
    };
  } finally {
    await proxy.close();
  }
}

/**
 * What one call waits for at least, with nothing else running in the proxy: the two reads at its
 * start and the version's at its end, one after another.
 */
async function readAlone(name: string, store: ObjectStore, upstream: string): Promise<ReadRow> {
  const replicas = new ReplicaSet([{ baseUrl: upstream, fetch }]);
  const state = new SharedRuntimeState({
    store,
    replicas,
    policyVersion: memoryPolicyVersion(),
    clock: Date.now,
  });
  await state.saveReplicas([upstream]);
  await state.saveVersion("1", "trainer");
  const times: number[] = [];
  for (let i = -20; i < READS; i++) {
    const t0 = performance.now();
    await state.refresh();
    await state.refreshVersion();
    if (i >= 0) times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { store: name, p50: at(0.5), p95: at(0.95) };
}

interface ReadRow {
  store: string;
  p50: number;
  p95: number;
}

const ms = (x: number) => x.toFixed(2);

const benchmark: Benchmark = {
  name: "shared-state",
  title: "Shared trainer state: the per-call cost of reading the replica set and version from the store",
  async run() {
    const [policy, s3] = await Promise.all([startPolicyProcess(), startS3()]);
    const dir = mkdtempSync(join(os.tmpdir(), "polar-bench-shared-"));
    const s3Env = {
      ...process.env,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_S3_FORCE_PATH_STYLE: "1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
      AWS_REGION: "us-east-1",
    };
    const rows: Row[] = [];
    const alone: ReadRow[] = [];
    let run = 0;
    try {
      const stores = [
        ["directory", () => openStore(join(dir, `run-${run++}`))],
        ["S3 (s3rver)", () => openStore(`s3://polar-bench/shared-${run++}`, s3Env)],
      ] as const;
      for (const [name, open] of stores) {
        console.error(`bench: shared-state ${name}: the reads alone...`);
        alone.push(await readAlone(name, open(), policy.url));
      }
      // One unmeasured run first (the process's first calls are slow: JIT, pools), then off and on
      // in ABBA order, three of each, so drift on this shared machine hits both alike.
      for (const [name, open] of stores) {
        console.error(`bench: shared-state ${name} warm-up...`);
        await runOne(name, open, false, policy.url);
        for (const shared of [false, true, true, false, false, true]) {
          console.error(`bench: shared-state ${name} ${shared ? "on" : "off"}...`);
          rows.push(await runOne(name, open, shared, policy.url));
        }
      }
    } finally {
      await Promise.all([policy.child.stop(), s3.child.stop()]);
      rmSync(dir, { recursive: true, force: true });
    }
    const merged = ["directory", "S3 (s3rver)"].flatMap((store) =>
      [false, true].map((shared) => {
        const mine = rows.filter((r) => r.store === store && r.shared === shared);
        const avg = (f: (r: Row) => number) => mine.reduce((a, r) => a + f(r), 0) / mine.length;
        return {
          store,
          shared,
          calls: mine.reduce((a, r) => a + r.calls, 0),
          p50: avg((r) => r.p50),
          p95: avg((r) => r.p95),
          mean: avg((r) => r.mean),
          readsPerCall: avg((r) => r.readsPerCall),
          callsPerSecond: mine.reduce((a, r) => a + r.calls, 0) / mine.reduce((a, r) => a + r.seconds, 0),
        };
      }),
    );
    const table = merged.map(
      (r) =>
        `| ${r.store} | ${r.shared ? "on: read per call" : "off"} | ${r.calls} | ${ms(r.p50)} | ${ms(r.p95)} | ${ms(r.mean)} | ${r.readsPerCall.toFixed(2)} | ${r.callsPerSecond.toFixed(0)} |`,
    );
    const added = (store: string, f: "p50" | "mean") => {
      const off = merged.find((r) => r.store === store && !r.shared)!;
      const on = merged.find((r) => r.store === store && r.shared)!;
      return ms(on[f] - off[f]);
    };
    const aloneTable = alone.map((r) => `| ${r.store} | ${ms(r.p50)} | ${ms(r.p95)} |`);
    const markdown = [
      "`npm run bench -- shared-state`. Every model call through a proxy with the control API's runtime routes on reads",
      "`control/replicas.json` and `control/policy-version.json` after it arrives, and the version again at its end",
      '(docs/control-api.md "Where this state lives").',
      "",
      `The reads alone (\`SharedRuntimeState\`, ${READS} times one after another, nothing else running in the proxy):`,
      "`refresh()` (both documents at once) then `refreshVersion()`, what every call waits for at least.",
      "",
      "| store | p50 (ms) | p95 (ms) |",
      "|---|---|---|",
      ...aloneTable,
      "",
      "Model calls, side by side: the same calls through a Node proxy with the runtime routes on and off, after one",
      "unmeasured run, in ABBA order three times each per store, in front of one dry-run policy (`polar policy`, its own process);",
      `${SESSIONS} sessions at once, ${CALLS} calls each, one after another (after ${WARMUP} unmeasured ones). Latency is the`,
      "client's, per call, in ms; store reads are counted at the proxy's store.",
      "",
      "| store | trainer state | calls | p50 (ms) | p95 (ms) | mean (ms) | store reads per call | calls/s |",
      "|---|---|---|---|---|---|---|---|",
      ...table,
      "",
      `On minus off: ${added("directory", "p50")} ms at the median and ${added("directory", "mean")} ms on average with a directory`,
      `store; ${added("S3 (s3rver)", "p50")} ms and ${added("S3 (s3rver)", "mean")} ms with S3 on s3rver (a local S3 server; a real`,
      "bucket adds its own GET round trip to each read). Fewer than 3 reads per call means concurrent calls shared reads;",
      "a read is never shared with a call that arrived after it began. At this machine's load a negative difference, or",
      "one below the spread between runs of the same setting, is noise: the reads alone (first table) are the cost.",
    ].join("\n");
    return { markdown };
  },
};

export default benchmark;

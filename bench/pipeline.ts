// Pipeline benchmark: how busy a fixed-capacity policy stays when session preparation (runtime,
// install, config) is serial with the run versus done by INIT workers ahead of a bounded READY
// buffer. Uses the real StagedPipeline and MemoryQueue with simulated stage work, time scaled down
// (1 simulated second = 5 ms). Runnable alone: `node bench/pipeline.ts`.
import { fileURLToPath } from "node:url";
import { Semaphore } from "../batch-runner/pipeline/semaphore.ts";
import { type PipelineStages, StagedPipeline } from "../batch-runner/pipeline/staged-pipeline.ts";
import { MemoryQueue } from "../batch-runner/queue/memory-queue.ts";
import type { Benchmark } from "./benchmark.ts";

const SCALE_MS = 5; // per simulated second
const CAPACITY = 8; // concurrent generations the policy serves
const SESSIONS = 256;
const PREP_S = 20; // container start, install, prepare steps
const RUN_MEAN_S = 5; // model-bound part, long-tailed

/** Deterministic long-tailed run times (lognormal, sigma 1), mean RUN_MEAN_S. */
function runTimes(n: number): number[] {
  let seed = 42;
  const rand = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return (seed + 0.5) / 2 ** 31;
  };
  const sigma = 1;
  const mu = Math.log(RUN_MEAN_S) - sigma ** 2 / 2;
  return Array.from({ length: n }, () => {
    const z = Math.sqrt(-2 * Math.log(rand())) * Math.cos(2 * Math.PI * rand());
    return Math.exp(mu + sigma * z);
  });
}

/** A policy that serves CAPACITY generations at once and integrates its busy slot-time. */
class SimulatedPolicy {
  private readonly slots = new Semaphore(CAPACITY);
  busyMs = 0;
  async generate(ms: number): Promise<void> {
    await this.slots.acquire();
    const start = performance.now();
    await sleep(ms);
    this.busyMs += performance.now() - start;
    this.slots.release();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const prepMs = (i: number) => PREP_S * SCALE_MS * (0.8 + (0.4 * ((i * 7919) % 100)) / 100);

async function simulate(mode: "serial" | "pipelined"): Promise<{ busy: number; wallMs: number }> {
  const policy = new SimulatedPolicy();
  const runs = runTimes(SESSIONS);
  const queue = new MemoryQueue();
  await queue.send(runs.map((_, i) => String(i)));
  const stages: PipelineStages<number, number> = {
    async init(msg) {
      const i = Number(msg.body);
      if (mode === "pipelined") await sleep(prepMs(i));
      return { kind: "prepared", value: i };
    },
    async run(i) {
      // Serial: each run slot prepares its own session, then runs it.
      if (mode === "serial") await sleep(prepMs(i));
      await policy.generate(runs[i] * SCALE_MS);
      return i;
    },
    async postrun() {},
    async discard() {},
    async onFailure() {
      return "release";
    },
  };
  const sizes =
    mode === "serial"
      ? { init: CAPACITY, ready: 0, run: CAPACITY, postrun: CAPACITY }
      : { init: 5 * CAPACITY, ready: CAPACITY, run: CAPACITY, postrun: CAPACITY };
  const pipeline = new StagedPipeline(queue, stages, {
    ...sizes,
    visibilityTimeoutSeconds: 600,
    waitSeconds: 0.01,
  });
  const start = performance.now();
  pipeline.start();
  while (queue.size() > 0) await sleep(2);
  const wallMs = performance.now() - start;
  await pipeline.stop(0);
  return { busy: policy.busyMs / (CAPACITY * wallMs), wallMs };
}

const bench: Benchmark = {
  name: "pipeline",
  title: "Session pipeline: policy busy fraction with a READY buffer vs serial prep-then-run",
  async run() {
    const serial = await simulate("serial");
    const pipelined = await simulate("pipelined");
    const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
    const markdown = [
      `${SESSIONS} sessions on a policy that serves ${CAPACITY} at once; preparation ~${PREP_S} s per session,`,
      `model-bound run lognormal with mean ${RUN_MEAN_S} s (long tail). Real StagedPipeline + MemoryQueue,`,
      `simulated stage work, 1 s simulated = ${SCALE_MS} ms.`,
      "",
      "| schedule | run slots | INIT workers | READY | policy busy | makespan (sim. s) |",
      "|---|---|---|---|---|---|",
      `| serial prep-then-run | ${CAPACITY} | - | 0 | ${pct(serial.busy)} | ${(serial.wallMs / SCALE_MS).toFixed(0)} |`,
      `| INIT pool + READY buffer | ${CAPACITY} | ${5 * CAPACITY} | ${CAPACITY} | ${pct(pipelined.busy)} | ${(pipelined.wallMs / SCALE_MS).toFixed(0)} |`,
      "",
      "The reference system reported rollout GPU utilization rising from 20% to 88% with this change.",
    ].join("\n");
    return { markdown };
  },
};

export default bench;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log((await bench.run()).markdown);
}

import { describe, expect, it } from "vitest";
import { type PipelineStages, StagedPipeline } from "../../batch-runner/pipeline/staged-pipeline.ts";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import type { QueueMessage } from "../../batch-runner/queue/queue.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Simulated stages that record what ran where, with a max-concurrency tracker per stage. */
function simulated(opts: {
  initMs?: number;
  runMs?: number | ((body: string) => Promise<void>);
  failInit?: (m: QueueMessage) => boolean;
}) {
  const live = { init: 0, ready: 0, run: 0, postrun: 0 };
  const max = { init: 0, ready: 0, run: 0, postrun: 0 };
  const log: string[] = [];
  const discarded: string[] = [];
  const failures: string[] = [];
  const bump = (k: keyof typeof live, d: number) => {
    live[k] += d;
    max[k] = Math.max(max[k], live[k]);
  };
  const stages: PipelineStages<string, string> = {
    async init(msg) {
      bump("init", 1);
      try {
        await sleep(opts.initMs ?? 5);
        if (opts.failInit?.(msg)) throw new Error(`init of ${msg.body} failed`);
        if (msg.body.startsWith("done")) return { kind: "done" };
        log.push(`init ${msg.body}`);
      } finally {
        bump("init", -1);
      }
      bump("ready", 1);
      return { kind: "prepared", value: msg.body };
    },
    async run(body, signal) {
      bump("ready", -1);
      bump("run", 1);
      try {
        if (typeof opts.runMs === "function") await opts.runMs(body);
        else
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, (opts.runMs as number | undefined) ?? 10);
            signal.addEventListener("abort", () => {
              clearTimeout(t);
              resolve();
            });
          });
        log.push(`run ${body}`);
        return body;
      } finally {
        bump("run", -1);
      }
    },
    async postrun(body) {
      bump("postrun", 1);
      await sleep(2);
      log.push(`postrun ${body}`);
      bump("postrun", -1);
    },
    async discard(body) {
      discarded.push(body);
    },
    async onFailure(msg, err) {
      failures.push(`${msg.body}#${msg.receiveCount}: ${(err as Error).message}`);
      return "release";
    },
  };
  return { stages, live, max, log, discarded, failures };
}

const base = { visibilityTimeoutSeconds: 30, waitSeconds: 0.05 };

describe("StagedPipeline", () => {
  it("runs every job through INIT, RUNNING and POSTRUN once, within each stage's slot count", async () => {
    const q = new MemoryQueue();
    const sim = simulated({ initMs: 15, runMs: 20 });
    const jobs = Array.from({ length: 12 }, (_, i) => `j${i}`);
    await q.send(jobs);
    const p = new StagedPipeline(q, sim.stages, { ...base, init: 3, ready: 2, run: 2, postrun: 1 });
    let maxReady = 0;
    const sampler = setInterval(() => {
      maxReady = Math.max(maxReady, p.stats().ready);
    }, 1);
    p.start();
    await until(() => q.size() === 0, "all acked");
    clearInterval(sampler);
    await p.stop(0);
    for (const j of jobs) {
      const steps = sim.log.filter((l) => l.endsWith(` ${j}`));
      expect(steps).toEqual([`init ${j}`, `run ${j}`, `postrun ${j}`]);
    }
    expect(sim.max.init).toBeLessThanOrEqual(3);
    expect(sim.max.run).toBeLessThanOrEqual(2);
    expect(sim.max.postrun).toBeLessThanOrEqual(1);
    // Prepared and not yet running: at most READY plus the INIT slots that wait for READY room.
    expect(sim.max.ready).toBeLessThanOrEqual(2 + 3);
    expect(maxReady).toBeLessThanOrEqual(2);
    expect(maxReady).toBeGreaterThan(0);
    expect(sim.max.run).toBe(2);
  });

  it("receives only while INIT has room: a stuck run slot leaves the rest of the queue untouched", async () => {
    const q = new MemoryQueue();
    let openGate: () => void = () => {};
    const gate = new Promise<void>((r) => {
      openGate = r;
    });
    const sim = simulated({ runMs: () => gate });
    await q.send(Array.from({ length: 20 }, (_, i) => `j${i}`));
    const p = new StagedPipeline(q, sim.stages, { ...base, init: 2, ready: 1, run: 1, postrun: 1 });
    p.start();
    await until(() => p.stats().run === 1 && p.stats().ready === 1 && p.stats().init === 0, "pipeline full");
    await sleep(100);
    // 1 running + 1 in READY + 2 prepared waiting in INIT slots for READY room; nothing more received.
    const inits = sim.log.filter((l) => l.startsWith("init")).length;
    expect(inits).toBe(4);
    expect(p.stats().inFlight).toBe(4);
    openGate();
    await until(() => q.size() === 0, "all acked");
    await p.stop(0);
    expect(sim.log.filter((l) => l.startsWith("postrun"))).toHaveLength(20);
  });

  it("acks a job whose INIT says there is nothing to do, without running it", async () => {
    const q = new MemoryQueue();
    const sim = simulated({});
    await q.send(["done-already", "fresh"]);
    const p = new StagedPipeline(q, sim.stages, { ...base, init: 1, ready: 1, run: 1, postrun: 1 });
    p.start();
    await until(() => q.size() === 0, "all acked");
    await p.stop(0);
    expect(sim.log).toEqual(["init fresh", "run fresh", "postrun fresh"]);
  });

  it("a failing stage releases the message for a retry; redrive sends it to the DLQ after N receives", async () => {
    const dlq = new MemoryQueue();
    const q = new MemoryQueue({ maxReceiveCount: 3, deadLetter: dlq });
    const sim = simulated({ failInit: (m) => m.body === "bad" });
    await q.send(["bad", "good"]);
    const p = new StagedPipeline(q, sim.stages, { ...base, init: 1, ready: 1, run: 1, postrun: 1 });
    p.start();
    await until(() => q.size() === 0, "queue drained");
    await p.stop(0);
    expect(sim.failures.map((f) => f.split(":")[0])).toEqual(["bad#1", "bad#2", "bad#3"]);
    expect((await dlq.receive(10)).map((m) => m.body)).toEqual(["bad"]);
    expect(sim.log).toContain("postrun good");
  });

  it("graceful shutdown: running sessions finish within the grace period, the rest go back to the queue", async () => {
    const q = new MemoryQueue();
    const sim = simulated({ runMs: 150 });
    await q.send(["a", "b", "c", "d"]);
    const p = new StagedPipeline(q, sim.stages, { ...base, init: 1, ready: 1, run: 1, postrun: 1 });
    p.start();
    await until(() => p.stats().run === 1 && p.stats().ready === 1, "one running, one ready");
    await p.stop(5_000);
    expect(sim.log).toContain("postrun a");
    // b (READY) and c (INIT) were prepared but never ran: torn down and released.
    expect(sim.discarded.sort()).toEqual(["b", "c"]);
    expect(q.size()).toBe(3);
    const back = await q.receive(10);
    expect(back.map((m) => m.body).sort()).toEqual(["b", "c", "d"]);
  });

  it("graceful shutdown: a run still going after the grace period is aborted and released, not finished", async () => {
    const q = new MemoryQueue();
    const sim = simulated({ runMs: 60_000 });
    await q.send(["long"]);
    const p = new StagedPipeline(q, sim.stages, { ...base, init: 1, ready: 1, run: 1, postrun: 1 });
    p.start();
    await until(() => p.stats().run === 1, "running");
    await p.stop(50);
    expect(sim.log).not.toContain("postrun long");
    expect(sim.discarded).toEqual(["long"]);
    const [back] = await q.receive(1);
    expect(back.body).toBe("long");
    expect(back.receiveCount).toBe(2);
  });

  it("rejects impossible sizes", () => {
    const q = new MemoryQueue();
    const sim = simulated({});
    expect(
      () => new StagedPipeline(q, sim.stages, { ...base, init: 0, ready: 1, run: 1, postrun: 1 }),
    ).toThrow(/init/);
    expect(
      () => new StagedPipeline(q, sim.stages, { ...base, init: 1, ready: -1, run: 1, postrun: 1 }),
    ).toThrow(/ready/);
  });
});

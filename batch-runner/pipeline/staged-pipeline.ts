import type { Queue, QueueMessage } from "../queue/queue.ts";
import { Semaphore } from "./semaphore.ts";
import { startHeartbeat } from "./visibility-heartbeat.ts";

export type InitOutcome<P> = { kind: "prepared"; value: P } | { kind: "done" };

/** The work of each stage; the pipeline only schedules, keeps messages alive and acks/releases them. */
export interface PipelineStages<P, R> {
  /** Prepare a session (runtime, install, config, token). `done` = nothing to run (e.g. result exists): ack. */
  init(msg: QueueMessage, signal: AbortSignal): Promise<InitOutcome<P>>;
  /** Run the harness. `signal` aborts on shutdown after the grace period (the session is then released). */
  run(prepared: P, signal: AbortSignal): Promise<R>;
  /** Reconstruct, evaluate, write the result. The message is acked after it resolves. */
  postrun(ran: R): Promise<void>;
  /** Tear down what INIT created for a session that will not reach POSTRUN (shutdown, failure). */
  discard(item: P | R): Promise<void>;
  /**
   * A stage threw: `release` for a retry now, a number for a retry after that many seconds (the
   * queue's redrive decides about the DLQ), `ack` when already handled (e.g. sent to a DLQ).
   */
  onFailure(msg: QueueMessage, err: unknown): Promise<"release" | "ack" | number>;
}

export interface PipelineOptions {
  init: number;
  /** READY buffer: prepared sessions waiting for a run slot. 0 = INIT waits for a run slot itself. */
  ready: number;
  run: number;
  postrun: number;
  visibilityTimeoutSeconds: number;
  /** Long-poll wait per receive. */
  waitSeconds: number;
  onError?: (err: unknown, where: string) => void;
  /** Stage timings for metrics. */
  onStage?: (stage: StageName, ms: number) => void;
  onSettled?: (outcome: "completed" | "failed" | "released" | "skipped") => void;
}

export type StageName = "init" | "ready" | "run" | "postrun";

export interface PipelineStats {
  init: number;
  ready: number;
  run: number;
  postrun: number;
  /** Messages received and not yet acked or released. */
  inFlight: number;
}

class ShutdownError extends Error {}

/**
 * The session pipeline: INIT, READY, RUNNING and POSTRUN with their own slot counts. A message is
 * received only when an INIT slot is free and the total in flight is under the sum of all stages, so
 * a slow stage pushes back all the way to the queue. Prepared sessions wait in READY (bounded) so a
 * run slot never waits on preparation.
 */
export class StagedPipeline<P, R> {
  private readonly queue: Queue;
  private readonly stages: PipelineStages<P, R>;
  private readonly opts: PipelineOptions;
  private readonly initSlots: Semaphore;
  private readonly readySlots: Semaphore;
  private readonly runSlots: Semaphore;
  private readonly postrunSlots: Semaphore;
  private readonly inFlightSlots: Semaphore;
  /** Stops receiving and abandons sessions not yet running. */
  private readonly stopReceiving = new AbortController();
  /** Aborts running harnesses once the grace period is over. */
  private readonly abortRuns = new AbortController();
  private readonly sessions = new Set<Promise<void>>();
  private loop: Promise<void> | null = null;
  private readonly counts: PipelineStats = { init: 0, ready: 0, run: 0, postrun: 0, inFlight: 0 };

  constructor(queue: Queue, stages: PipelineStages<P, R>, opts: PipelineOptions) {
    for (const k of ["init", "run", "postrun"] as const) {
      if (!Number.isInteger(opts[k]) || opts[k] < 1) throw new Error(`pipeline: ${k} workers must be >= 1`);
    }
    if (!Number.isInteger(opts.ready) || opts.ready < 0) throw new Error("pipeline: ready must be >= 0");
    this.queue = queue;
    this.stages = stages;
    this.opts = opts;
    this.initSlots = new Semaphore(opts.init);
    this.readySlots = new Semaphore(opts.ready);
    this.runSlots = new Semaphore(opts.run);
    this.postrunSlots = new Semaphore(opts.postrun);
    this.inFlightSlots = new Semaphore(opts.init + opts.ready + opts.run + opts.postrun);
  }

  stats(): PipelineStats {
    return { ...this.counts };
  }

  start(): void {
    if (!this.loop) this.loop = this.receiveLoop();
  }

  get stopping(): boolean {
    return this.stopReceiving.signal.aborted;
  }

  /** Resolves once every received message is acked or released. */
  async idle(): Promise<void> {
    while (this.sessions.size > 0) await Promise.allSettled([...this.sessions]);
  }

  /**
   * Graceful shutdown: stop receiving, release sessions not yet running, let running ones finish within
   * `graceMs`, then abort the rest and release them (visibility 0) for another runner.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopReceiving.abort(new ShutdownError("shutting down"));
    await this.loop;
    const timer = setTimeout(() => this.abortRuns.abort(new ShutdownError("grace period over")), graceMs);
    try {
      await this.idle();
    } finally {
      clearTimeout(timer);
    }
  }

  private async receiveLoop(): Promise<void> {
    const signal = this.stopReceiving.signal;
    while (!signal.aborted) {
      try {
        await this.inFlightSlots.acquire(signal);
        try {
          await this.initSlots.acquire(signal);
        } catch (err) {
          this.inFlightSlots.release();
          throw err;
        }
        // One slot is held; take more messages only for slots already free (SQS: at most 10).
        let slots = 1;
        while (slots < 10 && this.inFlightSlots.tryAcquire()) {
          if (this.initSlots.tryAcquire()) slots++;
          else {
            this.inFlightSlots.release();
            break;
          }
        }
        let msgs: QueueMessage[] = [];
        try {
          msgs = await this.queue.receive(slots, {
            waitSeconds: this.opts.waitSeconds,
            visibilityTimeoutSeconds: this.opts.visibilityTimeoutSeconds,
            signal,
          });
        } finally {
          for (let i = msgs.length; i < slots; i++) {
            this.initSlots.release();
            this.inFlightSlots.release();
          }
        }
        for (const msg of msgs) this.track(this.handle(msg));
      } catch (err) {
        if (signal.aborted) break;
        this.opts.onError?.(err, "receive");
        await sleep(1000, signal);
      }
    }
  }

  private track(p: Promise<void>): void {
    this.sessions.add(p);
    void p.finally(() => this.sessions.delete(p));
  }

  /** One message through all stages. Holds its INIT slot (taken by the receive loop) on entry. */
  private async handle(msg: QueueMessage): Promise<void> {
    this.counts.inFlight++;
    const heartbeat = startHeartbeat(this.queue, msg, this.opts.visibilityTimeoutSeconds, (err) =>
      this.opts.onError?.(err, "heartbeat"),
    );
    let item: P | R | null = null;
    let outcome: "completed" | "failed" | "released" | "skipped" = "failed";
    let holdsInitSlot = true;
    const releaseInitSlot = () => {
      if (holdsInitSlot) this.initSlots.release();
      holdsInitSlot = false;
    };
    let phase: StageName = "init";
    try {
      // INIT
      let started = Date.now();
      this.counts.init++;
      let initOut: InitOutcome<P>;
      try {
        initOut = await this.stages.init(msg, this.stopReceiving.signal);
      } finally {
        this.counts.init--;
        this.opts.onStage?.("init", Date.now() - started);
      }
      if (initOut.kind === "done") {
        releaseInitSlot();
        heartbeat.stop();
        await this.queue.ack(msg);
        outcome = "skipped";
        return;
      }
      item = initOut.value;

      // READY: wait for a run slot, in the bounded buffer (or holding the INIT slot when it is 0).
      phase = "ready";
      started = Date.now();
      if (this.opts.ready > 0) {
        try {
          await this.readySlots.acquire(this.stopReceiving.signal);
        } finally {
          releaseInitSlot();
        }
        this.counts.ready++;
        try {
          await this.runSlots.acquire(this.stopReceiving.signal);
        } finally {
          this.counts.ready--;
          this.readySlots.release();
        }
      } else {
        try {
          await this.runSlots.acquire(this.stopReceiving.signal);
        } finally {
          releaseInitSlot();
        }
      }
      this.opts.onStage?.("ready", Date.now() - started);

      // RUNNING
      phase = "run";
      started = Date.now();
      this.counts.run++;
      try {
        item = await this.stages.run(item as P, this.abortRuns.signal);
      } finally {
        this.counts.run--;
        this.runSlots.release();
        this.opts.onStage?.("run", Date.now() - started);
      }
      if (this.abortRuns.signal.aborted) throw this.abortRuns.signal.reason;

      // POSTRUN: always after a run, also after a timeout or crash of the harness.
      phase = "postrun";
      await this.postrunSlots.acquire();
      started = Date.now();
      this.counts.postrun++;
      try {
        await this.stages.postrun(item as R);
        item = null;
      } finally {
        this.counts.postrun--;
        this.postrunSlots.release();
        this.opts.onStage?.("postrun", Date.now() - started);
      }
      // No extend may race the delete.
      heartbeat.stop();
      await this.queue.ack(msg);
      outcome = "completed";
    } catch (err) {
      heartbeat.stop();
      releaseInitSlot();
      const shutdown =
        err instanceof ShutdownError ||
        (phase === "run" && this.abortRuns.signal.aborted) ||
        ((phase === "init" || phase === "ready") && this.stopReceiving.signal.aborted);
      outcome = await this.settleFailure(msg, err, item, shutdown);
    } finally {
      heartbeat.stop();
      this.counts.inFlight--;
      this.inFlightSlots.release();
      this.opts.onSettled?.(outcome);
    }
  }

  private async settleFailure(
    msg: QueueMessage,
    err: unknown,
    item: P | R | null,
    shutdown: boolean,
  ): Promise<"failed" | "released"> {
    if (item !== null) {
      await this.stages.discard(item).catch((e) => this.opts.onError?.(e, "discard"));
    }
    try {
      if (shutdown) {
        await this.queue.release(msg);
        return "released";
      }
      this.opts.onError?.(err, "session");
      const action = await this.stages.onFailure(msg, err);
      if (action === "ack") await this.queue.ack(msg);
      else if (action === "release" || action <= 0) await this.queue.release(msg);
      else await this.queue.extend(msg, action);
    } catch (e) {
      this.opts.onError?.(e, "settle");
    }
    return "failed";
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

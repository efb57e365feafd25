import type { Queue, QueueMessage, ReceiveOptions } from "./queue.ts";

export interface MemoryQueueOptions {
  url?: string;
  /** Default visibility timeout of a received message, as SQS's queue attribute. */
  visibilityTimeoutSeconds?: number;
  /** With `deadLetter`: a message already received this many times moves there on its next receive. */
  maxReceiveCount?: number;
  deadLetter?: MemoryQueue;
}

interface Entry {
  id: string;
  body: string;
  receiveCount: number;
  sentAt: number;
  /** ms epoch from which the message may be received again. */
  visibleAt: number;
  /** The receipt of the latest delivery; older receipts can no longer ack or extend. */
  receipt: string | null;
}

/**
 * The embedded default queue, with SQS's semantics: at-least-once delivery, a visibility timeout
 * after each receive, a receive count, and a redrive to a dead-letter queue after N receives.
 */
export class MemoryQueue implements Queue {
  readonly url: string;
  private readonly entries = new Map<string, Entry>();
  private readonly waiters = new Set<() => void>();
  private readonly visibilitySeconds: number;
  private readonly maxReceiveCount: number | undefined;
  private readonly deadLetter: MemoryQueue | undefined;
  private nextId = 0;
  private closed = false;

  constructor(opts: MemoryQueueOptions = {}) {
    this.url = opts.url ?? "memory://queue";
    this.visibilitySeconds = opts.visibilityTimeoutSeconds ?? 30;
    this.maxReceiveCount = opts.maxReceiveCount;
    this.deadLetter = opts.deadLetter;
  }

  async send(bodies: string[]): Promise<void> {
    for (const body of bodies) {
      const id = `m${++this.nextId}`;
      this.entries.set(id, { id, body, receiveCount: 0, sentAt: Date.now(), visibleAt: 0, receipt: null });
    }
    this.wake();
  }

  async receive(max: number, opts: ReceiveOptions = {}): Promise<QueueMessage[]> {
    const deadline = Date.now() + (opts.waitSeconds ?? 0) * 1000;
    const visibilityMs = (opts.visibilityTimeoutSeconds ?? this.visibilitySeconds) * 1000;
    for (;;) {
      if (this.closed || opts.signal?.aborted) return [];
      const got = this.take(Math.min(Math.max(max, 1), 10), visibilityMs);
      if (got.length > 0) return got;
      const now = Date.now();
      if (now >= deadline) return [];
      await this.waitForChange(Math.min(deadline, this.nextVisibleAt()) - now, opts.signal);
    }
  }

  async extend(msg: QueueMessage, seconds: number): Promise<void> {
    const entry = this.current(msg);
    if (entry) entry.visibleAt = Date.now() + seconds * 1000;
  }

  async release(msg: QueueMessage): Promise<void> {
    const entry = this.current(msg);
    if (!entry) return;
    entry.visibleAt = 0;
    this.wake();
  }

  async ack(msg: QueueMessage): Promise<void> {
    if (this.current(msg)) this.entries.delete(msg.messageId);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake();
  }

  /** Messages in the queue, visible or in flight (for tests and progress). */
  size(): number {
    return this.entries.size;
  }

  bodies(): string[] {
    return [...this.entries.values()].map((e) => e.body);
  }

  private take(max: number, visibilityMs: number): QueueMessage[] {
    const now = Date.now();
    const out: QueueMessage[] = [];
    for (const entry of [...this.entries.values()]) {
      if (out.length >= max) break;
      if (entry.visibleAt > now) continue;
      if (
        this.deadLetter &&
        this.maxReceiveCount !== undefined &&
        entry.receiveCount >= this.maxReceiveCount
      ) {
        // SQS moves the message when a receive would exceed maxReceiveCount.
        this.entries.delete(entry.id);
        void this.deadLetter.send([entry.body]);
        continue;
      }
      entry.receiveCount++;
      entry.visibleAt = now + visibilityMs;
      entry.receipt = `${entry.id}#${entry.receiveCount}`;
      out.push({
        handle: entry.receipt,
        messageId: entry.id,
        body: entry.body,
        receiveCount: entry.receiveCount,
        sentAt: entry.sentAt,
      });
    }
    return out;
  }

  private current(msg: QueueMessage): Entry | undefined {
    const entry = this.entries.get(msg.messageId);
    return entry && entry.receipt === msg.handle ? entry : undefined;
  }

  private nextVisibleAt(): number {
    let next = Number.POSITIVE_INFINITY;
    for (const e of this.entries.values()) if (e.visibleAt < next) next = e.visibleAt;
    return next;
  }

  private waitForChange(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, Math.min(ms, 60_000)));
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}

import { describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { openQueue } from "../../batch-runner/queue/open-queue.ts";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";

const bodies = (msgs: { body: string }[]) => msgs.map((m) => m.body);

describe("MemoryQueue", () => {
  it("delivers at most `max` (capped at 10) and hides received messages until acked", async () => {
    const q = new MemoryQueue({ visibilityTimeoutSeconds: 30 });
    await q.send(Array.from({ length: 12 }, (_, i) => `m${i}`));
    const first = await q.receive(20);
    expect(first).toHaveLength(10);
    expect(bodies(first)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
    const second = await q.receive(10);
    expect(bodies(second)).toEqual(["m10", "m11"]);
    expect(await q.receive(10)).toEqual([]);
    for (const m of [...first, ...second]) await q.ack(m);
    expect(q.size()).toBe(0);
  });

  it("redelivers after the visibility timeout with a higher receive count and a new handle", async () => {
    const q = new MemoryQueue();
    await q.send(["job"]);
    const [a] = await q.receive(1, { visibilityTimeoutSeconds: 0.05 });
    expect(a.receiveCount).toBe(1);
    const [b] = await q.receive(1, { waitSeconds: 2 });
    expect(b.body).toBe("job");
    expect(b.receiveCount).toBe(2);
    expect(b.handle).not.toBe(a.handle);
    // The stale handle of the first delivery can no longer delete the message.
    await q.ack(a);
    expect(q.size()).toBe(1);
    await q.ack(b);
    expect(q.size()).toBe(0);
  });

  it("extend keeps a message invisible; release makes it visible at once", async () => {
    const q = new MemoryQueue();
    await q.send(["job"]);
    const [a] = await q.receive(1, { visibilityTimeoutSeconds: 0.05 });
    await q.extend(a, 30);
    await new Promise((r) => setTimeout(r, 100));
    expect(await q.receive(1)).toEqual([]);
    await q.release(a);
    const [b] = await q.receive(1);
    expect(b.receiveCount).toBe(2);
  });

  it("moves a message to the dead-letter queue once it was received maxReceiveCount times", async () => {
    const dlq = new MemoryQueue();
    const q = new MemoryQueue({ maxReceiveCount: 2, deadLetter: dlq });
    await q.send(["poison"]);
    for (let i = 1; i <= 2; i++) {
      const [m] = await q.receive(1);
      expect(m.receiveCount).toBe(i);
      await q.release(m);
    }
    expect(await q.receive(1)).toEqual([]);
    expect(q.size()).toBe(0);
    expect(bodies(await dlq.receive(10))).toEqual(["poison"]);
  });

  it("a long poll returns as soon as a message is sent, and an abort ends it empty", async () => {
    const q = new MemoryQueue();
    const pending = q.receive(1, { waitSeconds: 10 });
    setTimeout(() => void q.send(["late"]), 20);
    expect(bodies(await pending)).toEqual(["late"]);
    const abort = new AbortController();
    const waiting = q.receive(1, { waitSeconds: 10, signal: abort.signal });
    abort.abort();
    expect(await waiting).toEqual([]);
  });
});

describe("openQueue", () => {
  it("maps memory to MemoryQueue and URLs to SQS, and rejects anything else", () => {
    expect(openQueue("memory")).toBeInstanceOf(MemoryQueue);
    const sqs = openQueue("http://127.0.0.1:9/123456789012/jobs");
    expect(sqs).toBeInstanceOf(SqsQueue);
    void sqs.close();
    expect(() => openQueue("jobs")).toThrow(/expected "memory" or an SQS queue URL/);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
import { type StartedSqs, startSqs } from "../support/sqs.ts";

let sqs: StartedSqs;
beforeAll(async () => {
  sqs = await startSqs();
});
afterAll(() => sqs.stop());

async function drain(q: SqsQueue, want: number, waitSeconds = 1) {
  const got = [];
  for (let i = 0; i < 10 && got.length < want; i++) got.push(...(await q.receive(10, { waitSeconds })));
  return got;
}

describe("SqsQueue against local-aws-sqs", () => {
  it("sends in batches of 10, receives at most 10 at a time, acks by receipt handle", async () => {
    const q = new SqsQueue({ url: await sqs.createQueue("batches"), client: sqs.client });
    const sent = Array.from({ length: 23 }, (_, i) => `job-${i}`);
    await q.send(sent);
    const first = await q.receive(25, { waitSeconds: 1, visibilityTimeoutSeconds: 60 });
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThanOrEqual(10);
    const rest = await drain(q, sent.length - first.length);
    const all = [...first, ...rest];
    expect(all.map((m) => m.body).sort()).toEqual([...sent].sort());
    expect(all.every((m) => m.receiveCount === 1)).toBe(true);
    for (const m of all) await q.ack(m);
    expect(await q.receive(10, { waitSeconds: 0 })).toEqual([]);
  });

  it("release puts a message back at once with a higher receive count", async () => {
    const q = new SqsQueue({ url: await sqs.createQueue("release"), client: sqs.client });
    await q.send(["again"]);
    const [a] = await q.receive(1, { waitSeconds: 1, visibilityTimeoutSeconds: 60 });
    await q.release(a);
    const [b] = await q.receive(1, { waitSeconds: 1, visibilityTimeoutSeconds: 60 });
    expect(b.body).toBe("again");
    expect(b.messageId).toBe(a.messageId);
    expect(b.receiveCount).toBeGreaterThan(a.receiveCount);
    await q.ack(b);
  });

  it("a message not acked within its visibility timeout comes back", async () => {
    const q = new SqsQueue({ url: await sqs.createQueue("visibility"), client: sqs.client });
    await q.send(["slow"]);
    const [a] = await q.receive(1, { waitSeconds: 1, visibilityTimeoutSeconds: 1 });
    expect(await q.receive(1, { waitSeconds: 0 })).toEqual([]);
    const [b] = await q.receive(1, { waitSeconds: 3, visibilityTimeoutSeconds: 60 });
    expect(b?.messageId).toBe(a.messageId);
    await q.ack(b);
  });

  it("the queue's RedrivePolicy moves a message to the dead-letter queue after maxReceiveCount", async () => {
    const dlqUrl = await sqs.createQueue("redrive-dlq");
    const q = new SqsQueue({
      url: await sqs.createQueue("redrive", { dlq: dlqUrl, maxReceiveCount: 2 }),
      client: sqs.client,
    });
    const dlq = new SqsQueue({ url: dlqUrl, client: sqs.client });
    await q.send(["poison"]);
    let moved: Awaited<ReturnType<SqsQueue["receive"]>> = [];
    for (let i = 0; i < 6 && moved.length === 0; i++) {
      for (const m of await q.receive(1, { waitSeconds: 1, visibilityTimeoutSeconds: 1 })) await q.release(m);
      moved = await dlq.receive(1, { waitSeconds: 1 });
    }
    expect(moved.map((m) => m.body)).toEqual(["poison"]);
    expect(await q.receive(1, { waitSeconds: 0 })).toEqual([]);
  });

  it("an aborted long poll returns empty instead of throwing", async () => {
    const q = new SqsQueue({ url: await sqs.createQueue("abort"), client: sqs.client });
    const abort = new AbortController();
    const pending = q.receive(1, { waitSeconds: 10, signal: abort.signal });
    setTimeout(() => abort.abort(), 50);
    expect(await pending).toEqual([]);
  });
});

import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "../../shared/keys.ts";
import { TaskRequest } from "../../shared/schemas/task.ts";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import type { Queue } from "../../batch-runner/queue/queue.ts";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
import { type Runner, startRunner } from "../../batch-runner/runner.ts";
import { submitTasks } from "../../batch-runner/submit.ts";
import { capturesOf, readResult, type RunnerStack, scriptedTask, startRunnerStack, waitFor } from "../support/runner-stack.ts";
import { type StartedSqs, startSqs } from "../support/sqs.ts";

let stack: RunnerStack;
let sqs: StartedSqs;
beforeAll(async () => {
  [stack, sqs] = await Promise.all([startRunnerStack(), startSqs()]);
});
afterAll(async () => {
  await stack?.close();
  await sqs?.stop();
});

interface Backend {
  name: string;
  /** A fresh queue and its dead-letter queue, redriving after `maxReceives` receives. */
  make(name: string, maxReceives: number): Promise<{ queue: Queue; dlq: Queue }>;
}

const backends: Backend[] = [
  {
    name: "memory",
    async make(_name, maxReceives) {
      const dlq = new MemoryQueue();
      return { queue: new MemoryQueue({ maxReceiveCount: maxReceives, deadLetter: dlq }), dlq };
    },
  },
  {
    name: "sqs",
    async make(name, maxReceives) {
      const dlqUrl = await sqs.createQueue(`${name}-dlq`);
      const url = await sqs.createQueue(name, { dlq: dlqUrl, maxReceiveCount: maxReceives });
      return { queue: new SqsQueue({ url, client: sqs.client }), dlq: new SqsQueue({ url: dlqUrl, client: sqs.client }) };
    },
  },
];

describe.each(backends)("runner faults on the $name queue", (backend) => {
  const runners: Runner[] = [];
  afterAll(async () => {
    for (const r of runners) await r.stop(0);
  });

  async function runnerOn(queue: Queue, maxReceives = 5) {
    const r = await startRunner({
      queue,
      store: stack.store,
      proxyUrl: stack.proxy.url,
      signingKey: stack.signingKey,
      run: 2,
      waitSeconds: 1,
      visibilityTimeoutSeconds: 60,
      maxReceives,
      cancelPollMs: 100,
      sessionsRoot: join(stack.root, "sessions"),
      log: () => {},
    });
    runners.push(r);
    return r;
  }

  it("stops a hanging harness at its budget and keeps its partial captures as a TIMEOUT trajectory", async () => {
    const id = `hang-${backend.name}`;
    const { queue } = await backend.make(id, 5);
    await runnerOn(queue);
    const task = TaskRequest.parse(scriptedTask(id, ["shell: sleep 60", "say: never"], { timeout_seconds: 1.5 }));
    await submitTasks(stack.store, queue, [task]);
    const result = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the TIMEOUT result");
    expect(result.status).toBe("TIMEOUT");
    expect(result.agent?.timed_out).toBe(true);
    expect(result.trajectory.reconstruction_stats.captures).toBe(1);
    expect(result.trajectory.traces).toHaveLength(1);
    expect(result.trajectory.traces[0].loss_mask).toContain(1);
    expect(result.reward).toBe(0);
    // The group shard lands with the task's last (only) session.
    const shard = await waitFor(() => stack.store.get(keys.shardJsonl(id)), "the group shard");
    expect(new TextDecoder().decode(shard)).toContain(`${id}-0`);
  });

  it("sends a job that always fails to the dead-letter queue after N receives", async () => {
    const id = `fails-${backend.name}`;
    const { queue, dlq } = await backend.make(id, 2);
    await runnerOn(queue, 2);
    const task = TaskRequest.parse(scriptedTask(id, ["say: unreachable"], { runtime: { prepare: ["exit 3"] } }));
    await submitTasks(stack.store, queue, [task]);
    const dead = await waitFor(async () => {
      const got = await dlq.receive(1, { waitSeconds: 1 });
      return got.length ? got : null;
    }, "the dead-lettered job");
    expect(JSON.parse(dead[0].body).session_id).toBe(`${id}-0`);
    expect(await capturesOf(stack.store, id, `${id}-0`)).toEqual([]);
  });

  it("honours cancel/{task_id}: before INIT (no run) and while running (harness stopped, ERROR)", async () => {
    const id = `cancel-${backend.name}`;
    const { queue } = await backend.make(id, 5);
    await runnerOn(queue);
    const task = TaskRequest.parse(scriptedTask(id, ["shell: sleep 60", "say: never"], { timeout_seconds: 60 }));
    await submitTasks(stack.store, queue, [task]);
    await waitFor(async () => (await capturesOf(stack.store, id, `${id}-0`)).length > 0, "the first model call");
    await stack.store.put(keys.cancel(id), "cancelled by test");
    const running = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the cancelled result");
    expect(running.status).toBe("ERROR");
    expect(running.error).toMatch(/cancelled/);
    expect(running.agent?.timed_out).toBe(false);
    expect(running.trajectory.reconstruction_stats.captures).toBe(1);

    const before = TaskRequest.parse(scriptedTask(`${id}-b`, ["say: never"]));
    await stack.store.put(keys.cancel(before.task_id), "");
    await submitTasks(stack.store, queue, [before]);
    const never = await waitFor(() => readResult(stack.store, before.task_id, `${before.task_id}-0`), "result");
    expect(never.error).toMatch(/cancelled before it ran/);
    expect(await capturesOf(stack.store, before.task_id, `${before.task_id}-0`)).toEqual([]);
  });

  it("acknowledges a redelivered job whose result exists without running it again", async () => {
    const id = `dup-${backend.name}`;
    const { queue } = await backend.make(id, 5);
    const runner = await runnerOn(queue);
    const task = TaskRequest.parse(scriptedTask(id, ["shell: echo hi", "say: done"]));
    await submitTasks(stack.store, queue, [task]);
    const first = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the first result");
    expect(first.status).toBe("COMPLETED");
    const calls = (await capturesOf(stack.store, id, `${id}-0`)).length;
    // The same job delivered again (at-least-once): acked, nothing reruns, the result stands.
    await queue.send([JSON.stringify({ v: 1, task_id: id, session_id: `${id}-0`, sample_index: 0, task })]);
    await waitFor(async () => runner.pipeline.stats().inFlight === 0 && (await queue.receive(1, { waitSeconds: 0 })).length === 0, "the duplicate acked");
    expect((await capturesOf(stack.store, id, `${id}-0`)).length).toBe(calls);
    expect((await readResult(stack.store, id, `${id}-0`))?.timings.finished_at).toBe(first.timings.finished_at);
  });
});

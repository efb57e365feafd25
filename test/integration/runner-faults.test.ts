import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import type { Queue } from "../../batch-runner/queue/queue.ts";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
import { type Runner, startRunner } from "../../batch-runner/runner.ts";
import { submitTasks } from "../../batch-runner/submit.ts";
import { keys } from "../../shared/keys.ts";
import { TaskRequest } from "../../shared/schemas/task.ts";
import {
  capturesOf,
  type RunnerStack,
  readResult,
  scriptedTask,
  startRunnerStack,
  waitFor,
} from "../support/runner-stack.ts";
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
      return {
        queue: new SqsQueue({ url, client: sqs.client }),
        dlq: new SqsQueue({ url: dlqUrl, client: sqs.client }),
      };
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
    const task = TaskRequest.parse(
      scriptedTask(id, ["shell: sleep 60", "say: never"], { timeout_seconds: 1.5 }),
    );
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
    const task = TaskRequest.parse(
      scriptedTask(id, ["say: unreachable"], { runtime: { prepare: ["exit 3"] } }),
    );
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
    const task = TaskRequest.parse(
      scriptedTask(id, ["shell: sleep 60", "say: never"], { timeout_seconds: 60 }),
    );
    await submitTasks(stack.store, queue, [task]);
    await waitFor(
      async () => (await capturesOf(stack.store, id, `${id}-0`)).length > 0,
      "the first model call",
    );
    // The harness started: the control API reads this marker as `running`.
    const marker = await stack.store.get(keys.started(id, `${id}-0`));
    const started = marker && JSON.parse(new TextDecoder().decode(marker));
    expect(started).toMatchObject({ attempt: 0, started_at: expect.any(String) });
    await stack.store.put(keys.cancel(id), "cancelled by test");
    const running = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the cancelled result");
    expect(running.status).toBe("ERROR");
    expect(running.error).toMatch(/cancelled/);
    expect(running.agent?.timed_out).toBe(false);
    expect(running.trajectory.reconstruction_stats.captures).toBe(1);

    const before = TaskRequest.parse(scriptedTask(`${id}-b`, ["say: never"]));
    await stack.store.put(keys.cancel(before.task_id), "");
    await submitTasks(stack.store, queue, [before]);
    const never = await waitFor(
      () => readResult(stack.store, before.task_id, `${before.task_id}-0`),
      "result",
    );
    expect(never.error).toMatch(/cancelled before it ran/);
    expect(await capturesOf(stack.store, before.task_id, `${before.task_id}-0`)).toEqual([]);
    expect(await stack.store.get(keys.started(before.task_id, `${before.task_id}-0`))).toBeNull();
  });

  it("acknowledges a redelivered job whose result exists without running it again", async () => {
    const id = `dup-${backend.name}`;
    const { queue } = await backend.make(id, 5);
    const runner = await runnerOn(queue);
    const task = TaskRequest.parse(scriptedTask(id, ["shell: echo hi", "say: done"]));
    await submitTasks(stack.store, queue, [task]);
    const first = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the first result");
    expect(first.status).toBe("COMPLETED");
    // queued_at comes from the queue's send time.
    expect(first.timings.queued_at).not.toBeNull();
    expect(Date.parse(first.timings.queued_at as string)).toBeLessThanOrEqual(
      Date.parse(first.timings.finished_at),
    );
    const calls = (await capturesOf(stack.store, id, `${id}-0`)).length;
    // The same job delivered again (at-least-once): acked, nothing reruns, the result stands.
    await queue.send([JSON.stringify({ v: 1, task_id: id, session_id: `${id}-0`, sample_index: 0, task })]);
    await waitFor(
      async () =>
        runner.pipeline.stats().inFlight === 0 && (await queue.receive(1, { waitSeconds: 0 })).length === 0,
      "the duplicate acked",
    );
    expect((await capturesOf(stack.store, id, `${id}-0`)).length).toBe(calls);
    expect((await readResult(stack.store, id, `${id}-0`))?.timings.finished_at).toBe(
      first.timings.finished_at,
    );
  });
});

describe("completion notice", () => {
  it("goes to the results queue and the task's callback_url once the task's last session is terminal", async () => {
    const { createServer } = await import("node:http");
    const posted: unknown[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        posted.push(JSON.parse(body));
        res.end("ok");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const queue = new MemoryQueue();
    const resultsQueue = new MemoryQueue();
    const runner = await startRunner({
      queue,
      resultsQueue,
      store: stack.store,
      proxyUrl: stack.proxy.url,
      signingKey: stack.signingKey,
      run: 2,
      waitSeconds: 1,
      sessionsRoot: join(stack.root, "sessions"),
      // The test's callback server is plain http on loopback: allowed for this host only.
      callbackAllowHosts: ["127.0.0.1"],
      log: () => {},
    });
    try {
      const id = "notice";
      const task = TaskRequest.parse(
        scriptedTask(id, ["say: hi"], { num_samples: 2, callback_url: `http://127.0.0.1:${port}/done` }),
      );
      await submitTasks(stack.store, queue, [task]);
      await waitFor(async () => posted.length > 0, "the callback");
      const [notice] = await resultsQueue.receive(10);
      expect(JSON.parse(notice.body)).toMatchObject({ type: "task_completed", task_id: id, sessions: 2 });
      expect(posted[0]).toMatchObject({ type: "task_completed", task_id: id, sessions: 2, rows: 2 });
      // A directory store's URL is a host path: kept out of the callback's body (shard_key says where).
      expect(posted[0]).toMatchObject({ shard_key: "trajectories/notice.parquet", shard_url: null });
    } finally {
      await runner.stop(0);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("reruns and task errors (memory queue)", () => {
  async function memoryRunner(queue: MemoryQueue) {
    return startRunner({
      queue,
      store: stack.store,
      proxyUrl: stack.proxy.url,
      signingKey: stack.signingKey,
      run: 2,
      waitSeconds: 1,
      sessionsRoot: join(stack.root, "sessions"),
      log: () => {},
    });
  }

  it("a resubmitted job runs as a new attempt past the captures an earlier run left", async () => {
    const { mintSessionToken } = await import("../../shared/session-token.ts");
    const id = "resubmit";
    // An earlier run (attempt 0) made one model call and died without a result.
    const token = await mintSessionToken({ sessionId: `${id}-0`, taskId: id, attempt: 0 }, stack.signingKey);
    const res = await fetch(`${stack.proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hello" }] }),
    });
    expect(res.status).toBe(200);
    const [stale] = await capturesOf(stack.store, id, `${id}-0`);
    expect(stale.attempt).toBe(0);

    const queue = new MemoryQueue();
    const runner = await memoryRunner(queue);
    try {
      await submitTasks(stack.store, queue, [
        TaskRequest.parse(scriptedTask(id, ["shell: echo hi", "say: done"])),
      ]);
      const result = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the result");
      expect(result.status).toBe("COMPLETED");
      expect(result.attempt).toBe(1);
      const used = result.trajectory.traces.flatMap((t) => t.capture_ids);
      expect(used.length).toBeGreaterThan(0);
      expect(used).not.toContain(stale.capture_id);
    } finally {
      await runner.stop(0);
    }
  });

  it("a task the runner cannot set up (shell harness without a command) ends as ERROR without retries", async () => {
    const queue = new MemoryQueue({ maxReceiveCount: 5, deadLetter: new MemoryQueue() });
    const runner = await memoryRunner(queue);
    try {
      const id = "no-command";
      await submitTasks(stack.store, queue, [
        TaskRequest.parse({ task_id: id, instruction: "x", agent: { harness: "shell" } }),
      ]);
      const result = await waitFor(() => readResult(stack.store, id, `${id}-0`), "the ERROR result");
      expect(result.status).toBe("ERROR");
      expect(result.error).toMatch(/agent\.settings\.command/);
      expect(result.attempt).toBe(0);
    } finally {
      await runner.stop(0);
    }
  });
});

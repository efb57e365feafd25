import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqsQueue } from "../../batch-runner/queue/sqs-queue.ts";
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

const polar = fileURLToPath(new URL("../../bin/polar.js", import.meta.url));

let stack: RunnerStack;
let sqs: StartedSqs;
const children: ChildProcess[] = [];
beforeAll(async () => {
  [stack, sqs] = await Promise.all([startRunnerStack(), startSqs()]);
});
afterAll(async () => {
  // SIGTERM first: a runner stops its sessions and unmounts their volumes (as root, each session's
  // work dir is a loop-mounted image); SIGKILL only one that does not exit.
  await Promise.all(children.map((c) => stopChild(c, 10_000)));
  await stack?.close();
  await sqs?.stop();
});

async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** `polar runner` as its own process, so it can be killed like a node losing power. */
function spawnRunner(queueUrl: string): { child: ChildProcess; output: () => string } {
  let output = "";
  const child = spawn(
    process.execPath,
    [
      polar,
      "runner",
      "--queue",
      queueUrl,
      "--store",
      stack.store.root,
      "--proxy-url",
      stack.proxy.url,
      "--run",
      "2",
      // Short, so the dead runner's messages come back soon; not shorter, or a loaded machine's late
      // heartbeat lets a live session's message come back too, and it runs twice.
      "--visibility-timeout",
      "5",
      "--wait-seconds",
      "1",
      "--max-receives",
      "50",
      "--grace-seconds",
      "5",
      "--sessions-dir",
      join(stack.root, "sessions"),
    ],
    {
      env: { ...process.env, ...sqs.env, POLAR_SIGNING_KEY: stack.signingKey },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stdout?.on("data", (d) => (output += d));
  child.stderr?.on("data", (d) => (output += d));
  children.push(child);
  return { child, output: () => output };
}

describe("a runner killed mid-session (SIGKILL) on SQS", () => {
  it("another runner finishes every session exactly once; reruns do not mix in the dead attempt's captures", async () => {
    const queueUrl = await sqs.createQueue("sigkill");
    const tasks = ["k1", "k2"].map((id) =>
      TaskRequest.parse(
        scriptedTask(id, ["shell: sleep 1", "shell: echo done > out.txt", "say: finished"], {
          num_samples: 2,
        }),
      ),
    );
    await submitTasks(stack.store, new SqsQueue({ url: queueUrl, client: sqs.client }), tasks);
    const sessions = tasks.flatMap((t) =>
      [0, 1].map((i) => ({ task: t.task_id, session: `${t.task_id}-${i}` })),
    );

    const a = spawnRunner(queueUrl);
    // Kill A once a session is mid-run: it made a model call and has no result yet.
    await waitFor(async () => {
      for (const s of sessions) {
        if ((await capturesOf(stack.store, s.task, s.session)).length > 0) return true;
      }
      return false;
    }, `runner A to start a session (output: ${a.output()})`);
    a.child.kill("SIGKILL");
    await new Promise((r) => a.child.once("exit", r));
    const doneByA = new Set<string>();
    for (const s of sessions) if (await readResult(stack.store, s.task, s.session)) doneByA.add(s.session);
    expect(doneByA.size).toBeLessThan(sessions.length);

    const b = spawnRunner(queueUrl);
    for (const s of sessions) {
      await waitFor(
        () => readResult(stack.store, s.task, s.session),
        `result of ${s.session} (runner B: ${b.output()})`,
        30_000,
      );
    }
    // B cleaned up what A left behind (A's harness processes and session dirs).
    expect(b.output()).toMatch(/reaped \d+ session/);
    b.child.kill("SIGTERM");
    const code = await new Promise((r) => b.child.once("exit", r));
    expect(code).toBe(0);

    let rerun = 0;
    for (const s of sessions) {
      const result = (await readResult(stack.store, s.task, s.session))!;
      expect(result.status).toBe("COMPLETED");
      const attemptOf = new Map(
        (await capturesOf(stack.store, s.task, s.session)).map((c) => [c.capture_id, c.attempt]),
      );
      const used = result.trajectory.traces.flatMap((t) => t.capture_ids);
      expect(used.length).toBeGreaterThan(0);
      // Only the captures of the attempt that wrote the result are in its trajectory.
      for (const id of used) expect(attemptOf.get(id)).toBe(result.attempt);
      if (!doneByA.has(s.session)) {
        expect(result.attempt).toBeGreaterThan(0);
        rerun++;
      }
    }
    expect(rerun).toBeGreaterThan(0);

    // Each task's shard has every session exactly once.
    for (const t of tasks) {
      const jsonl = new TextDecoder().decode((await stack.store.get(keys.shardJsonl(t.task_id)))!);
      const rows = jsonl
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { session_id: string; trace_index: number });
      const ids = rows.map((r) => `${r.session_id}#${r.trace_index}`);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(rows.map((r) => r.session_id))).toEqual(new Set([`${t.task_id}-0`, `${t.task_id}-1`]));
    }
    // Nothing left on the queue.
    const left = await new SqsQueue({ url: queueUrl, client: sqs.client }).receive(10, { waitSeconds: 0 });
    expect(left).toEqual([]);
    // Above the sum of its own waits (20 s for A, 30 s a session for B), so a slow stage fails with
    // its name and the runners' output, not vitest's bare 30 s timeout (as it did on a loaded CI run).
  }, 180_000);
});

import { describe, expect, it } from "vitest";
import { renderCommand } from "../../batch-runner/harness/shell.ts";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { shellQuote } from "../../batch-runner/runtime/shell-quote.ts";
import { parseTasksJsonl, submitTasks, TaskConflictError } from "../../batch-runner/submit.ts";
import { isValidId } from "../../shared/ids.ts";
import { keys } from "../../shared/keys.ts";
import { AgentSpec, SessionJob, StoredTask } from "../../shared/schemas/task.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { sessionIdsFor } from "../../shared/tasks/submit-task.ts";

const task = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    task_id: id,
    instruction: "do it",
    agent: { harness: "shell", settings: { command: "true" } },
    ...extra,
  });

describe("parseTasksJsonl", () => {
  it("reports every bad line with its number and the field path, and keeps the good ones", () => {
    const text = [
      task("ok-1", { num_samples: 3 }),
      "",
      "{not json",
      task("bad id/with slash"),
      JSON.stringify({ task_id: "t", instruction: "x", agent: { harness: "nope" } }),
      task("ok-2", { num_samples: 0 }),
      task("ok-1"),
    ].join("\n");
    const { tasks, errors } = parseTasksJsonl(text);
    expect(tasks.map((t) => t.task_id)).toEqual(["ok-1"]);
    expect(tasks[0].num_samples).toBe(3);
    expect(errors.map((e) => e.line)).toEqual([3, 4, 5, 6, 7]);
    expect(errors[0].message).toMatch(/not valid JSON/);
    expect(errors[1].message).toMatch(/^task_id: /);
    expect(errors[2].message).toMatch(/^agent\.harness: /);
    expect(errors[3].message).toMatch(/^num_samples: /);
    expect(errors[4].message).toMatch(/already used on line 1/);
  });
});

describe("sessionIdsFor", () => {
  it("is deterministic, a valid id, and distinct per sample even for the longest task ids", async () => {
    expect((await sessionIdsFor("t1", 1))[0]).toBe("t1-0");
    const long = "x".repeat(128);
    const all = await sessionIdsFor(long, 10_000);
    const ids = [0, 1, 9999].map((i) => all[i]);
    expect(ids.every(isValidId)).toBe(true);
    expect(new Set(ids).size).toBe(3);
    expect((await sessionIdsFor(long, 2))[1]).toBe(ids[1]);
  });
});

describe("submitTasks", () => {
  it("stores the task with submitted_at and enqueues num_samples SessionJobs", async () => {
    const store = new MemoryStore();
    const queue = new MemoryQueue();
    const { tasks } = parseTasksJsonl(task("t1", { num_samples: 12 }));
    const out = await submitTasks(store, queue, tasks, () => new Date("2026-01-02T03:04:05Z"));
    expect(out).toEqual({ tasks: 1, enqueued: 12, skipped: 0 });
    const stored = StoredTask.parse(
      JSON.parse(new TextDecoder().decode((await store.get(keys.task("t1")))!)),
    );
    expect(stored.submitted_at).toBe("2026-01-02T03:04:05.000Z");
    const jobs = queue.bodies().map((b) => SessionJob.parse(JSON.parse(b)));
    expect(jobs.map((j) => j.session_id)).toEqual(Array.from({ length: 12 }, (_, i) => `t1-${i}`));
    expect(jobs.map((j) => j.sample_index)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(jobs[0].task.task_id).toBe("t1");
  });

  it("resubmitting enqueues only sessions without a result; a changed request under the same id is refused", async () => {
    const store = new MemoryStore();
    const queue = new MemoryQueue();
    const { tasks } = parseTasksJsonl(task("t1", { num_samples: 3 }));
    await submitTasks(store, queue, tasks);
    await store.put(keys.result("t1", "t1-1"), "{}");
    const again = new MemoryQueue();
    expect(await submitTasks(store, again, tasks)).toEqual({ tasks: 1, enqueued: 2, skipped: 1 });
    expect(again.bodies().map((b) => JSON.parse(b).session_id)).toEqual(["t1-0", "t1-2"]);
    const changed = parseTasksJsonl(task("t1", { num_samples: 3, instruction: "something else" })).tasks;
    await expect(submitTasks(store, new MemoryQueue(), changed)).rejects.toThrow(TaskConflictError);
  });
});

describe("shell harness command", () => {
  it("substitutes the instruction as one shell-quoted argument, whatever it contains", async () => {
    const nasty = `it's "quoted" $(rm -rf /) \`x\` \n newline`;
    const { spawnSync } = await import("node:child_process");
    const agent = AgentSpec.parse({ harness: "shell", settings: { command: "printf %s {{instruction}}" } });
    const cmd = renderCommand("printf %s {{instruction}}", {
      agent,
      instruction: nasty,
      proxyUrl: "http://p",
      sessionToken: "tok",
      homeDir: "/h",
      workDir: "/w",
    });
    const out = spawnSync("sh", ["-c", cmd], { encoding: "utf8" });
    expect(out.stdout).toBe(nasty);
    expect(shellQuote("a'b")).toBe(`'a'\\''b'`);
  });
});

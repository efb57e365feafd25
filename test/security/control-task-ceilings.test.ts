/**
 * A control-token holder (a trainer, or a plug-in passing on a dataset row) shapes the whole task,
 * and a task's limits win over the runner's defaults: without an operator ceiling, one submitted
 * task could take the node (memory 1e6 MiB, 4096 calls in flight, a day-long timeout). With
 * `--max-task-limits` such a task ends ERROR at INIT naming the field, and an honest task still runs.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTaskCeilings } from "../../batch-runner/runtime/task-ceilings.ts";
import { HarborConfig, MAX_HARBOR_STEPS } from "../../shared/schemas/task-settings.ts";
import { type PolarServe, startPolarServe } from "../support/polar-serve.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
let dir: string;
let serve: PolarServe;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-ceilings-"));
  serve = await startPolarServe(join(dir, "serve"), [
    "--max-task-limits",
    "memory_mb=2048,max_in_flight=8,timeout_seconds=600,steps=2",
    // The point is the ceiling, not the sandbox: this also runs where bwrap cannot.
    "--allow-unsandboxed",
  ]);
}, 90_000);

afterAll(async () => {
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

const firstTask = async () =>
  JSON.parse((await readFile(join(ROOT, "examples/tasks.jsonl"), "utf8")).split("\n")[0]);

async function submit(task: unknown): Promise<void> {
  const res = await fetch(new URL("/v1/tasks", serve.url), {
    method: "POST",
    headers: { authorization: `Bearer ${serve.token}`, "content-type": "application/json" },
    body: JSON.stringify(task),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

async function results(taskId: string, n: number): Promise<Array<{ status: string; error: string | null }>> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await fetch(new URL(`/v1/tasks/${taskId}`, serve.url), {
      headers: { authorization: `Bearer ${serve.token}` },
    });
    const status = (await res.json()) as { counts: { finished: number } };
    if (status.counts.finished >= n) break;
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not finish:\n${serve.output()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const dirOf = join(dir, "serve/store/results", taskId);
  const { readdir } = await import("node:fs/promises");
  return Promise.all(
    (await readdir(dirOf)).map(async (f) => JSON.parse(await readFile(join(dirOf, f), "utf8"))),
  );
}

describe("operator ceilings on what a submitted task asks for", () => {
  it("a task over a ceiling ends ERROR at INIT naming it; one within them runs", async () => {
    const base = await firstTask();
    const greedy = [
      { ...base, task_id: "greedy-memory", num_samples: 1, runtime: { limits: { memory_mb: 1_000_000 } } },
      {
        ...base,
        task_id: "greedy-calls",
        num_samples: 1,
        agent: { ...base.agent, proxy_limits: { max_in_flight: 4096 } },
      },
      { ...base, task_id: "greedy-time", num_samples: 1, timeout_seconds: 86_400 },
      // Issue 49: each step runs the harness and a judge, and keeps artifacts.
      {
        ...base,
        task_id: "greedy-steps",
        num_samples: 1,
        evaluator: {
          strategy: "harbor",
          config: {
            tests: { "test.sh": "echo 1 > /logs/verifier/reward.txt" },
            steps: ["a", "b", "c"].map((name) => ({ name, instruction: `step ${name}` })),
          },
        },
      },
    ];
    const honest = { ...base, task_id: "honest", num_samples: 1, runtime: { limits: { memory_mb: 1024 } } };
    for (const t of [...greedy, honest]) await submit(t);
    const expected = {
      "greedy-memory": "runtime.limits.memory_mb 1000000 is above this runner's ceiling 2048",
      "greedy-calls": "agent.proxy_limits.max_in_flight 4096 is above this runner's ceiling 8",
      "greedy-time": "timeout_seconds 86400 is above this runner's ceiling 600",
      "greedy-steps": "evaluator.config.steps 3 is above this runner's ceiling 2",
    };
    for (const [id, why] of Object.entries(expected)) {
      const [r] = await results(id, 1);
      expect(r.status, JSON.stringify(r)).toBe("ERROR");
      expect(r.error).toContain(why);
    }
    const [ok] = await results("honest", 1);
    expect(ok.status, JSON.stringify(ok)).toBe("COMPLETED");
  }, 180_000);

  it("--max-task-limits refuses an unknown name or a non-positive value, naming it", () => {
    expect(parseTaskCeilings("memory_mb=10, pids=5")).toEqual({ memory_mb: 10, pids: 5 });
    expect(() => parseTaskCeilings("memory=10")).toThrow(/"memory=10" is not NAME=N/);
    expect(() => parseTaskCeilings("pids=0")).toThrow(/pids must be a positive number/);
    expect(() => parseTaskCeilings("pids=1=2")).toThrow(/not NAME=N/);
    expect(parseTaskCeilings("steps=4")).toEqual({ steps: 4 });
  });

  it("bounds a multi-step task's steps without a ceiling too (issue 49)", () => {
    const steps = (n: number) =>
      HarborConfig.safeParse({
        tests: { "test.sh": "true" },
        steps: Array.from({ length: n }, (_, i) => ({ name: `s${i}`, instruction: "go" })),
      }).success;
    expect(steps(MAX_HARBOR_STEPS)).toBe(true);
    expect(steps(MAX_HARBOR_STEPS + 1)).toBe(false);
  });
});

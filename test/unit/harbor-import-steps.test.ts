import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvaluationContext } from "../../batch-runner/evaluation/evaluator.ts";
import { freshRuntimes } from "../../batch-runner/evaluation/fresh-runtime.ts";
import { harbor } from "../../batch-runner/evaluation/harbor.ts";
import { importHarborTask } from "../../batch-runner/harbor/import-task.ts";
import { ArtifactBudget } from "../../batch-runner/pipeline/keep-artifacts.ts";
import { runStatus } from "../../batch-runner/pipeline/session-postrun.ts";
import { runSteps } from "../../batch-runner/pipeline/session-steps.ts";
import type { PreparedSession, RanSession, SessionDeps } from "../../batch-runner/pipeline/session-types.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import { TaskRequest } from "../../shared/schemas/task.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

/*
 * A multi-step Harbor task's session without a container engine (the process runtime, the real
 * `harbor` evaluator): test/fixtures/harbor-features/step-notes imported, then each step's "harness"
 * a shell line (the step's solution, or nothing) that also leaves a capture, as a model call would.
 * test/e2e/harbor-features.test.ts runs the same task on podman with a real harness.
 */
const ROOT = new URL("../..", import.meta.url).pathname;
let root: string;
const made: Runtime[] = [];
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-harbor-steps-"));
});
afterAll(async () => {
  await Promise.all(made.map((r) => r.stop().catch(() => {})));
  await rm(root, { recursive: true, force: true });
});

/** A store whose capture listing is what the step commands left in `captures` (one file a call). */
class CaptureStore extends MemoryStore {
  private readonly dir: string;
  constructor(dir: string) {
    super();
    this.dir = dir;
  }
  override async list(prefix: string): Promise<string[]> {
    if (!prefix.startsWith("captures/")) return super.list(prefix);
    return (await readdir(this.dir).catch(() => [])).map((f) => `${prefix}${f}.json.gz`);
  }
}

let n = 0;
async function session(
  scripts: Record<string, string>,
  patch: (cfg: Record<string, unknown>) => void = () => {},
) {
  const id = `steps-${++n}`;
  const captures = join(root, `${id}-captures`);
  await mkdir(captures, { recursive: true });
  const { task: imported } = await importHarborTask(join(ROOT, "test/fixtures/harbor-features/step-notes"), {
    agent: { harness: "shell", settings: { command: "true" } },
  });
  const task = TaskRequest.parse({ ...imported, runtime: { env: {}, limits: {} } });
  patch(task.evaluator.config);
  const factory = processRuntimeFactory({ sessionsRoot: root });
  const spec = { sessionId: id, env: {}, limits: {}, proxyUrl: "http://127.0.0.1:9" };
  const runtime = await factory.create(spec);
  made.push(runtime);
  // What the image's WORKDIR holds (environment/header.txt, COPY'd there); no image here.
  await writeFile(join(runtime.workDir, "header.txt"), "notes of polar\n");
  const fresh = freshRuntimes({
    factory,
    spec: { ...spec, sessionId: `${id}.eval` },
    prepare: [],
    timeoutMs: 30_000,
    prewarm: false,
  });
  const store = new CaptureStore(captures);
  const logs: string[] = [];
  const steps = (harbor.steps?.(task.evaluator.config) ?? []).map((step) => ({
    step,
    // The step's "harness": its script, then one capture named after the step.
    invocation: {
      argv: ["sh", "-c", `${scripts[step.name] ?? "true"}\ntouch ${captures}/${step.name}-call`],
      env: {},
    },
  }));
  const s = {
    job: { task_id: "notes", session_id: id, sample_index: 0, v: 1, task },
    task,
    attempt: 0,
    runtime,
    evaluator: harbor,
    fresh,
    steps,
    budgetMs: 60_000,
    artifactBudget: new ArtifactBudget(),
  } as unknown as PreparedSession & { steps: typeof steps };
  const deps = { store, log: (l: string) => logs.push(l) } as unknown as SessionDeps;
  const ran = await runSteps(deps, s, {});
  await fresh.dispose();
  const ctx: EvaluationContext = {
    runtime,
    workDir: runtime.workDir,
    agent: { exitCode: 0, timedOut: false, finalAnswer: null },
    timeoutMs: 30_000,
    config: task.evaluator.config,
    freshRuntime: () => Promise.reject(new Error("a multi-step task is not judged again")),
    steps: ran.outcomes,
  };
  const trajectory = {
    status: "COMPLETED",
    traces: [
      {
        capture_ids: ran.outcomes.flatMap((o) => o.captureIds),
        loss_mask: [],
        version_spans: ran.outcomes.flatMap((o, i) =>
          o.captureIds.map(() => ({ start: i, end: i + 1, version_start: null, version_end: null })),
        ),
      },
    ],
  } as unknown as Trajectory;
  return { ran, logs, store, runtime, final: () => harbor.evaluate(trajectory, ctx) };
}

describe("a multi-step Harbor task in one session", () => {
  it("runs each step after its files and setup.sh, judges it, and means the steps' rewards", async () => {
    const { ran, store, final } = await session({
      create: "cp header.txt notes.txt",
      append: "test ! -e setup.sh && cat extra.txt >> notes.txt",
    });
    expect(ran.outcomes.map((o) => [o.name, o.evaluation?.outcome_reward ?? null, o.error])).toEqual([
      ["create", 1, null],
      ["append", 1, null],
    ]);
    // Each step's capture is its own: step rewards land on the turns it produced.
    expect(ran.outcomes.map((o) => o.captureIds)).toEqual([["create-call"], ["append-call"]]);
    const ev = await final();
    expect(ev.outcome_reward).toBe(1);
    expect(ev.step_rewards).toEqual([[1, 1]]);
    // The task's artifact after each step, the step's own artifact after its step.
    const text = async (k: string) => new TextDecoder().decode((await store.get(k)) ?? new Uint8Array());
    expect(ran.artifacts).toEqual([
      "artifacts/notes/steps-1/0/steps/create/workdir/notes.txt",
      "artifacts/notes/steps-1/0/steps/append/workdir/notes.txt",
      "artifacts/notes/steps-1/0/steps/append/workdir/extra.txt",
    ]);
    expect(await text(ran.artifacts[1] as string)).toBe("notes of polar\nsecond line\n");
    expect(await text(ran.artifacts[2] as string)).toBe("second line\n");
  }, 60_000);

  it("judges a step whose harness failed or ran past its own time, as Harbor does, and goes on; the session completes", async () => {
    const { ran, final } = await session(
      { create: "cp header.txt notes.txt; exit 3", append: "cat extra.txt >> notes.txt; exec sleep 30" },
      (cfg) => {
        (cfg.steps as { agent_timeout_seconds?: number }[])[1] = {
          ...(cfg.steps as object[])[1],
          agent_timeout_seconds: 1,
        };
      },
    );
    expect(ran.outcomes.map((o) => [o.name, o.evaluation?.outcome_reward, o.error])).toEqual([
      ["create", 1, "step create: the harness exited 3"],
      ["append", 1, "step append: the agent ran past its 1 s"],
    ]);
    expect((await final()).outcome_reward).toBe(1);
    const ranSession = {
      cancelled: false,
      exec: ran.exec,
      stepOutcomes: ran.outcomes,
      runMs: 5_000,
      budgetMs: 60_000,
      limits: {},
      task: { timeout_seconds: 60 },
      preset: { name: "shell" },
    } as unknown as RanSession;
    expect(ran.exec?.timedOut).toBe(true);
    expect(runStatus(ranSession, { finalAnswer: null, success: true })).toEqual({
      status: "COMPLETED",
      error: null,
    });
    // Past the session's whole budget it is a timeout, as any session's.
    expect(runStatus({ ...ranSession, runMs: 60_000 }, { finalAnswer: null, success: true }).status).toBe(
      "TIMEOUT",
    );
  }, 60_000);

  it("stops at a step below its min_reward: the later steps never run", async () => {
    const { ran, logs, runtime, final } = await session({ create: "true" });
    expect(ran.outcomes.map((o) => [o.name, o.evaluation?.outcome_reward])).toEqual([["create", 0]]);
    expect(logs.join("\n")).toContain(
      "step create: reward 0 is below its min_reward 1; the remaining steps do not run",
    );
    // append's files never landed.
    expect(await readdir(runtime.workDir)).not.toContain("extra.txt");
    const ev = await final();
    expect(ev.outcome_reward).toBe(0);
    expect((ev.metadata.steps as { name: string; error?: string }[])[1]).toEqual({
      name: "append",
      reward: null,
      error: "did not run: an earlier step or the budget ended the steps",
    });
  }, 60_000);

  it("ends the steps at a failing healthcheck, the step unjudged, its reason kept", async () => {
    const { ran, final } = await session({ create: "cp header.txt notes.txt" }, (cfg) => {
      const steps = cfg.steps as { healthcheck?: { command: string } }[];
      if (steps[1]?.healthcheck) steps[1].healthcheck.command = "test -e never-there";
    });
    expect(ran.outcomes.map((o) => [o.name, o.evaluation?.outcome_reward ?? null])).toEqual([
      ["create", 1],
      ["append", null],
    ]);
    expect(ran.outcomes[1]?.error).toBe(
      "step append: its healthcheck (test -e never-there) failed 2 times (last exited 1)",
    );
    // Issue 49: the unjudged step counts 0 (Harbor's mean left it out, scoring a full solve).
    const ev = await final();
    expect(ev.outcome_reward).toBe(0.5);
    expect((ev.metadata.steps as { error?: string }[])[1]?.error).toContain("healthcheck");
    expect(ev.metadata.unrewarded_steps_count_as_zero).toEqual(["append"]);
  }, 60_000);

  it("an agent that makes a later step fail scores what doing that step honestly scores (issue 49)", async () => {
    // An honest agent that does step one only: step two judged 0, mean 0.5.
    const honest = await session({ create: "cp header.txt notes.txt", append: "true" });
    expect((await honest.final()).outcome_reward).toBe(0.5);
    // The same, plus a directory where step two's file must land: step two errors, never judged.
    const { ran, final } = await session({ create: "cp header.txt notes.txt; mkdir extra.txt" });
    expect(ran.outcomes.map((o) => [o.name, o.evaluation?.outcome_reward ?? null])).toEqual([
      ["create", 1],
      ["append", null],
    ]);
    expect(ran.outcomes[1]?.error).toContain("writing extra.txt failed");
    expect((await final()).outcome_reward).toBe(0.5);
  }, 60_000);
});

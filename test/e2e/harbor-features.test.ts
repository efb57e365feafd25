import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";
import { IMAGE_REPOSITORY } from "../../batch-runner/runtime/image-build.ts";
import { nodeGpus } from "../../batch-runner/runtime/node-gpus.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { podmanLane } from "../support/podman.ts";
import { readTaskResults } from "../support/runner-stack.ts";
import { runPolar, shellScript } from "./polar-run-process.ts";

/*
 * Harbor's task.toml features, end to end on podman (test/fixtures/harbor-features, tasks of our own):
 * skill-stamp (`version`, a Dockerfile with COPY and RUN from its context, `skills_dir`: the answer
 * is only in the skill, so the solution must find it where the harness reads skills) and step-notes
 * (`[[steps]]` with per-step tests over the task's shared helpers, a step's `workdir/` and
 * `setup.sh`, `min_reward`, a healthcheck, verifier env, `artifacts` task- and step-level), beside a
 * job's config.yaml and metrics/. `polar import-harbor` converts them, `polar run` builds each image
 * once and runs the pi preset driven by the dry-run policy: the solved variants run the reference
 * solutions (each step its own) and score 1, the idle ones 0. A task asking for a GPU the node
 * lacks ends ERROR at INIT with the reason.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURES = join(ROOT, "test", "fixtures", "harbor-features");
const lane = await podmanLane();
if (!lane.ok) console.warn(`harbor-features: skipped: ${lane.reason}`);

async function solution(path: string): Promise<string[]> {
  return (await readFile(join(FIXTURES, path), "utf8"))
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"));
}

interface Step {
  name: string;
  instruction: string;
}

describe.skipIf(!lane.ok)("Harbor task.toml features run on podman", () => {
  let dir: string;
  let store: DirectoryStore;
  let run: { code: number | null; stdout: string; stderr: string };
  let imported: { code: number | null; stdout: string; stderr: string };
  const results: Record<string, SessionResult[]> = {};
  const nonce = randomBytes(6).toString("hex");
  const ids = ["stamp-solved", "stamp-idle", "notes-solved", "notes-idle", "stamp-gpu"];

  beforeAll(async () => {
    if (!lane.ok) return;
    await installHarness(CLI_PRESETS.pi, { log: (line) => console.log(`[pi] ${line}`) });
    dir = await mkdtemp(join(tmpdir(), "polar-harbor-features-"));
    const collection = join(dir, "collection");
    await cp(FIXTURES, collection, { recursive: true });
    // Fresh files in each context: tags of this run's own, built here (once each).
    for (const task of ["skill-stamp", "step-notes"])
      await writeFile(join(collection, task, "environment", "nonce.txt"), `${nonce}\n`);
    const env = {
      ...process.env,
      POLAR_BASE_IMAGES: `debian:bookworm-slim=${lane.image}`,
      POLAR_BUILD_DIRS: dir,
      POLAR_SESSIONS_DIR: join(dir, "sessions"),
    };
    imported = await runPolar(["import-harbor", collection, "--harness", "pi"], env, 60_000);
    expect(imported.code, imported.stderr).toBe(0);
    const byId = Object.fromEntries(
      imported.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
        .map((t) => [t.task_id, t]),
    );
    const { "skill-stamp": stamp, "step-notes": notes } = byId;
    const withSteps = (scripts: (step: Step) => Promise<string[]>) =>
      Promise.all(
        (notes.evaluator.config.steps as Step[]).map(async (s) => ({
          ...s,
          instruction: s.instruction + shellScript(await scripts(s)),
        })),
      );
    const solvedSteps = await withSteps((s) => solution(`step-notes/steps/${s.name}/solution/solve.sh`));
    const idleSteps = await withSteps(async () => []);
    const stepped = (steps: Step[]) => ({
      ...notes,
      instruction: steps[0]?.instruction,
      evaluator: { ...notes.evaluator, config: { ...notes.evaluator.config, steps } },
    });
    const tasks = [
      {
        ...stamp,
        task_id: "stamp-solved",
        instruction: stamp.instruction + shellScript(await solution("skill-stamp/solution/solve.sh")),
      },
      { ...stamp, task_id: "stamp-idle", instruction: stamp.instruction + shellScript([]) },
      { ...stepped(solvedSteps), task_id: "notes-solved" },
      { ...stepped(idleSteps), task_id: "notes-idle" },
      {
        ...stamp,
        task_id: "stamp-gpu",
        runtime: { ...stamp.runtime, limits: { ...stamp.runtime.limits, gpus: nodeGpus() + 1 } },
      },
    ];
    const tasksFile = join(dir, "tasks.jsonl");
    await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
    // The engine as the runner calls it, each command logged (for the images to remove after).
    const engine = join(dir, "podman-logged");
    await writeFile(engine, `#!/bin/sh\necho "$*" >> ${join(dir, "engine.log")}\nexec podman "$@"\n`);
    await chmod(engine, 0o755);
    run = await runPolar(
      ["run", tasksFile, "--out", join(dir, "out"), "--run", "4", "--docker-bin", engine],
      env,
      480_000,
    );
    store = new DirectoryStore(join(dir, "out", "store"));
    for (const id of ids) results[id] = await readTaskResults(store, id);
  }, 600_000);

  afterAll(async () => {
    if (!lane.ok) return;
    // The images this run built (their tags are this run's): none left on the node.
    const log = await readFile(join(dir, "engine.log"), "utf8").catch(() => "");
    for (const tag of log.matchAll(/--tag (\S+)/g))
      if (tag[1]?.startsWith(IMAGE_REPOSITORY)) spawnSync("podman", ["rmi", "-f", tag[1]]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const one = (id: string): SessionResult => {
    const [r] = results[id] ?? [];
    expect(r, `${id}: no result\n${run?.stdout}\n${run?.stderr}`).toBeDefined();
    return r as SessionResult;
  };
  const text = async (key: string) => new TextDecoder().decode((await store.get(key)) ?? new Uint8Array());

  it("imports the collection beside a job's config.yaml and metrics/, every feature kept", () => {
    expect(imported.stderr).toContain("2 of 2 tasks converted");
    expect(imported.stderr).not.toContain("metrics: refused");
  });

  it("copies skills_dir where the harness reads skills: the solved variant 1, the idle one 0", () => {
    const solved = one("stamp-solved");
    expect(solved.status, `${solved.error}\n${run.stdout}\n${run.stderr}`).toBe("COMPLETED");
    expect(solved.reward, JSON.stringify(solved.evaluation)).toBe(1);
    const idle = one("stamp-idle");
    expect(idle.status, `${idle.error}`).toBe("COMPLETED");
    expect(idle.reward).toBe(0);
  });

  it("runs the steps in one session, each judged after it: solved 1 (both steps), idle 0 (stopped at min_reward)", () => {
    const solved = one("notes-solved");
    expect(solved.status, `${solved.error}\n${run.stdout}\n${run.stderr}`).toBe("COMPLETED");
    expect(solved.reward, JSON.stringify(solved.evaluation)).toBe(1);
    const steps = (solved.evaluation as { metadata: { steps: { name: string; reward: number }[] } }).metadata
      .steps;
    expect(steps.map((s) => [s.name, s.reward])).toEqual([
      ["create", 1],
      ["append", 1],
    ]);
    const idle = one("notes-idle");
    expect(idle.status, `${idle.error}`).toBe("COMPLETED");
    expect(idle.reward).toBe(0);
    const idleSteps = (idle.evaluation as { metadata: { steps: { name: string; reward: number }[] } })
      .metadata.steps;
    // create scored 0 < its min_reward 1: append never ran, and counts 0 (issue 49).
    expect(idleSteps.map((s) => [s.name, s.reward])).toEqual([
      ["create", 0],
      ["append", null],
    ]);
  });

  it("records each step's reward as a step reward on the turns that step produced", () => {
    const solved = one("notes-solved");
    const rewards = (solved.evaluation as { step_rewards?: (number | null)[][] }).step_rewards ?? [];
    expect(rewards.flat().filter((r) => r !== null)).toEqual([1, 1]);
    const spans = solved.trajectory.traces.flatMap((t) => t.step_rewards ?? []);
    expect(spans.map((s) => s.reward)).toEqual([1, 1]);
  });

  it("keeps the artifacts with the session's outputs: after each step and after the run", async () => {
    const artifacts = one("notes-solved").artifacts ?? [];
    const keyOf = (suffix: string) => artifacts.find((k) => k.endsWith(suffix));
    // After the run: `{attempt}/workdir/notes.txt`, beside the steps' `{attempt}/steps/{name}/workdir/...`.
    const final = artifacts.find((k) => /\/\d+\/workdir\/notes\.txt$/.test(k));
    expect(final, artifacts.join("\n")).toBeDefined();
    expect(await text(final as string)).toBe("notes of polar\nsecond line\n");
    expect(await text(keyOf("/steps/create/workdir/notes.txt") as string)).toBe("notes of polar\n");
    expect(await text(keyOf("/steps/append/workdir/notes.txt") as string)).toBe(
      "notes of polar\nsecond line\n",
    );
    // The step's own artifact, as its setup.sh left it (trailing blanks trimmed).
    expect(await text(keyOf("/steps/append/workdir/extra.txt") as string)).toBe("second line\n");
  });

  it("ends a task asking for GPUs the node lacks ERROR at INIT with the reason", () => {
    const r = one("stamp-gpu");
    expect(r.status).toBe("ERROR");
    expect(r.error).toMatch(
      /runtime.limits.gpus cannot be enforced by docker here: the task asks for \d+ GPUs? and this node has \d+/,
    );
    expect(r.agent ?? null).toBeNull();
  });
});

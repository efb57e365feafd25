import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Evaluation, SessionStep, StepOutcome } from "../../batch-runner/evaluation/evaluator.ts";
import { aggregateSteps, stepRewardsOnTurns, stopAfter } from "../../batch-runner/evaluation/harbor-steps.ts";
import { engineLimits } from "../../batch-runner/runtime/host-limits.ts";
import { buildImage } from "../../batch-runner/runtime/image-build.ts";
import { buildContextOf, buildRef, splitBuildContext } from "../../batch-runner/runtime/image-build-ref.ts";
import { nodeGpus } from "../../batch-runner/runtime/node-gpus.ts";
import { RuntimeSpecRefused } from "../../batch-runner/runtime/runtime-spec-refused.ts";
import { HarborConfig } from "../../shared/schemas/task-settings.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";

/*
 * What a Harbor task asks of the run beside its import (test/unit/harbor-import.test.ts): its build
 * time limit, GPUs the node may lack, and a multi-step task's reward as Harbor's MultiStepTrial
 * derives it. test/e2e/harbor-features.test.ts runs the fixture tasks end to end on podman.
 */
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-harbor-run-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("environment.build_timeout_sec", () => {
  it("travels in the build reference and round-trips", () => {
    expect(buildRef("/t/env")).toBe("build:/t/env");
    expect(buildRef("/t/env", 90)).toBe("build:timeout=90:/t/env");
    expect(splitBuildContext(buildContextOf(buildRef("/t/env", 90)) as string)).toEqual({
      dir: "/t/env",
      timeoutMs: 90_000,
    });
    expect(splitBuildContext("/t/env")).toEqual({ dir: "/t/env", timeoutMs: null });
  });

  it("stops a build past the task's own limit, though the runner's is longer (ERROR at INIT, said so)", async () => {
    const ctx = join(root, "slow");
    await mkdir(ctx, { recursive: true });
    await writeFile(join(ctx, "Dockerfile"), "FROM x\nWORKDIR /app\n");
    // An engine that has only the base image (no ONBUILD triggers, read the docker way) and whose
    // build never ends: only a time limit stops it.
    const bin = join(root, "slow-engine");
    const id = "a".repeat(64);
    await writeFile(
      bin,
      `#!/bin/sh\ncase "$1 $2 $4 $5" in\n  "build "*) exec sleep 60;;\n  "image inspect {{.Id}} x") echo ${id};;\n  "image inspect {{json .Config.OnBuild}} ${id}") echo null;;\n  *) exit 1;;\nesac\n`,
    );
    await chmod(bin, 0o755);
    const engine = { bin, kind: "docker" as const, globalFlags: [], runFlags: [] };
    const started = Date.now();
    const err = await buildImage(engine, `timeout=1:${ctx}`, {
      baseImages: {},
      buildDirs: [root],
      timeoutMs: 60_000,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(RuntimeSpecRefused);
    expect((err as Error).message).toMatch(
      /building the image from .*\/slow\/Dockerfile failed \(.* build ran past 1 s \(the task's build_timeout_sec\)\)/,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);
});

describe("a task asking for GPUs the node lacks", () => {
  const spec = (gpus: number) => ({ sessionId: "s", env: {}, limits: { gpus }, proxyUrl: "http://x" });

  it("is refused by the container engines with the count, before anything starts", async () => {
    const dev = join(root, "dev");
    await mkdir(dev, { recursive: true });
    expect(nodeGpus({}, dev)).toBe(0);
    await writeFile(join(dev, "nvidia0"), "");
    await writeFile(join(dev, "nvidiactl"), "");
    expect(nodeGpus({}, dev)).toBe(1);
    expect(nodeGpus({ POLAR_NODE_GPUS: "4" }, dev)).toBe(4);
    expect(() => nodeGpus({ POLAR_NODE_GPUS: "many" }, dev)).toThrow(/POLAR_NODE_GPUS/);
    const have = nodeGpus();
    for (const backend of ["docker", "apptainer"] as const) {
      expect(() => engineLimits(backend, spec(have + 1))).toThrow(
        new RegExp(
          `runtime.limits.gpus cannot be enforced by ${backend} here: the task asks for ${have + 1} GPUs? and this node has ${have}`,
        ),
      );
      expect(engineLimits(backend, spec(0)).gpus).toBeUndefined();
    }
  });
});

describe("a multi-step task's reward, as Harbor's MultiStepTrial derives it", () => {
  const cfg = (strategy: "mean" | "final", key = "reward") =>
    HarborConfig.parse({
      tests: {},
      reward_key: key,
      step_reward_strategy: strategy,
      steps: ["a", "b", "c"].map((name) => ({
        name,
        instruction: `do ${name}`,
        tests: { "test.sh": "true" },
      })),
    });
  const ev = (rewards: Record<string, number>): Evaluation => ({
    outcome_reward: rewards.reward ?? Object.values(rewards)[0] ?? 0,
    metadata: { rewards },
  });
  const outcome = (
    name: string,
    e: Evaluation | null,
    captureIds: string[] = [],
    error: string | null = null,
  ) => ({
    name,
    evaluation: e,
    error,
    captureIds,
  });
  const traj = (traces: { ids: string[] }[]): Trajectory =>
    ({
      status: "COMPLETED",
      builder: "prefix_merging",
      error: null,
      traces: traces.map(({ ids }) => ({
        capture_ids: ids,
        loss_mask: [],
        version_spans: ids.map((_, i) => ({
          start: i * 2,
          end: i * 2 + 1,
          version_start: null,
          version_end: null,
        })),
      })),
    }) as unknown as Trajectory;

  it("means each key over all the task's steps (a key a step lacks, and a step without a reward, count 0)", () => {
    const out = aggregateSteps(
      cfg("mean"),
      [
        outcome("a", ev({ reward: 1, style: 1 })),
        outcome("b", ev({ reward: 0 })),
        outcome("c", null, [], "step c was not judged: no reward file"),
      ],
      traj([]),
    );
    expect(out.outcome_reward).toBeCloseTo(1 / 3);
    expect(out.metadata.rewards).toEqual({ reward: 1 / 3, style: 1 / 3 });
    expect((out.metadata.steps as { name: string; reward: number | null }[]).map((s) => s.reward)).toEqual([
      1,
      0,
      null,
    ]);
  });

  it("takes the task's last step with `final` (0 when it got no reward), and fails the session when no step was judged", () => {
    const steps = [outcome("a", ev({ reward: 0 })), outcome("b", ev({ reward: 1 }))];
    expect(
      aggregateSteps(cfg("final"), [...steps, outcome("c", ev({ reward: 1 }))], traj([])).outcome_reward,
    ).toBe(1);
    // The agent stopping the steps before the last (or its judging) may not keep an earlier step's reward.
    expect(aggregateSteps(cfg("final"), steps, traj([])).outcome_reward).toBe(0);
    expect(
      aggregateSteps(cfg("final"), [...steps, outcome("c", null, [], "x")], traj([])).outcome_reward,
    ).toBe(0);
    expect(() =>
      aggregateSteps(cfg("mean"), [outcome("a", null, [], "setup.sh exited 1")], traj([])),
    ).toThrow(/no step was judged \(a: setup.sh exited 1\)/);
  });

  it("puts each step's reward on the last sampled turn of that step, in each trace holding it", () => {
    const steps = [outcome("a", ev({ reward: 1 }), ["c1", "c2"]), outcome("b", ev({ reward: 0.25 }), ["c3"])];
    // One trace through both steps (the harness kept its context) and a sub-agent's trace in step a.
    expect(stepRewardsOnTurns(traj([{ ids: ["c1", "c2", "c3"] }, { ids: ["c9", "c1"] }]), steps)).toEqual([
      [null, 1, 0.25],
      [null, 1],
    ]);
    const whole = aggregateSteps(cfg("mean"), steps, traj([{ ids: ["c1", "c2", "c3"] }]));
    expect(whole.step_rewards).toEqual([[null, 1, 0.25]]);
  });

  it("stops after a failed step, or one below its min_reward (a float on `reward`, a table per key)", () => {
    const step = (minReward: Record<string, number> | null): SessionStep => ({
      name: "a",
      instruction: "x",
      timeoutMs: null,
      files: {},
      setup: false,
      healthcheck: null,
      minReward,
      artifacts: [],
    });
    const judged = (r: Record<string, number>): StepOutcome => outcome("a", ev(r));
    expect(stopAfter(step(null), judged({ reward: 0 }))).toBeNull();
    expect(stopAfter(step({ reward: 1 }), judged({ reward: 1 }))).toBeNull();
    expect(stopAfter(step({ reward: 1 }), judged({ reward: 0.5 }))).toBe(
      "step a: reward 0.5 is below its min_reward 1",
    );
    expect(stopAfter(step({ style: 0.5 }), judged({ reward: 1 }))).toBe(
      "step a: style -Infinity is below its min_reward 0.5",
    );
    expect(stopAfter(step(null), outcome("a", null, [], "its healthcheck failed"))).toBe(
      "step a failed: its healthcheck failed",
    );
  });

  it("needs test.sh in the task's tests or in every step's", () => {
    const steps = [{ name: "a", instruction: "x", tests: {} }];
    expect(HarborConfig.safeParse({ tests: {}, steps }).success).toBe(false);
    expect(HarborConfig.safeParse({ tests: { "test.sh": "x" }, steps }).success).toBe(true);
    expect(HarborConfig.safeParse({ tests: {} }).success).toBe(false);
  });

  it("writes a step's files only inside the work dir", () => {
    const step = (path: string) => ({
      name: "a",
      instruction: "x",
      tests: { "test.sh": "x" },
      files: { [path]: "" },
    });
    for (const bad of ["/etc/profile", "../outside", "a/../../b"])
      expect(HarborConfig.safeParse({ tests: {}, steps: [step(bad)] }).success, bad).toBe(false);
    expect(HarborConfig.safeParse({ tests: {}, steps: [step("sub/config.txt")] }).success).toBe(true);
  });
});

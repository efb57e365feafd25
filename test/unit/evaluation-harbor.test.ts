import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvaluationContext } from "../../batch-runner/evaluation/evaluator.ts";
import { harbor } from "../../batch-runner/evaluation/harbor.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";

let root: string;
let runtime: Runtime;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-eval-harbor-"));
  runtime = await processRuntimeFactory({ sessionsRoot: root }).create({
    sessionId: "harbor-agent",
    env: {},
    limits: {},
    proxyUrl: "http://127.0.0.1:9",
  });
  // What the agent left: its answer, and an attempt to plant a passing reward and a conftest.
  await writeFile(join(runtime.workDir, "hello.txt"), "hi\n");
  await mkdir(join(runtime.workDir, "harbor", "logs", "verifier"), { recursive: true });
  await writeFile(join(runtime.workDir, "harbor", "logs", "verifier", "reward.txt"), "1\n");
});
afterAll(async () => {
  await runtime.stop();
  await rm(root, { recursive: true, force: true });
});

let judges = 0;
const judgesMade: Runtime[] = [];
const trajectory = { status: "COMPLETED", traces: [] } as unknown as Trajectory;
function ctx(config: Record<string, unknown>): EvaluationContext {
  return {
    runtime,
    workDir: runtime.workDir,
    agent: { exitCode: 0, timedOut: false, finalAnswer: null },
    timeoutMs: 20_000,
    config,
    freshRuntime: async () => {
      const r = await processRuntimeFactory({ sessionsRoot: root }).create({
        sessionId: `harbor-judge-${++judges}`,
        env: {},
        limits: {},
        proxyUrl: "http://127.0.0.1:9",
      });
      judgesMade.push(r);
      return r;
    },
  };
}

// A Terminal-Bench style test.sh: container paths throughout, reward under /logs/verifier.
const TEST_SH = `#!/bin/bash
cd /app
python3 /tests/check.py > /logs/verifier/check.log 2>&1
if [ "$(cat /logs/verifier/check.log)" = ok ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`;
const CHECK_PY = `import pathlib\nprint("ok" if pathlib.Path("/app/hello.txt").read_text().strip() == "hi" else "wrong")\n`;

describe("harbor evaluator", () => {
  it("runs the task's tests in a fresh runtime with its container paths rewritten, reward from reward.txt", async () => {
    const ev = await harbor.evaluate(
      trajectory,
      ctx({ tests: { "test.sh": TEST_SH, "check.py": CHECK_PY } }),
    );
    expect(ev.metadata).toMatchObject({ exit_code: 0, reward_from: "reward.txt", rewards: { reward: 1 } });
    expect(ev.outcome_reward).toBe(1);
    // The judge was not the agent's runtime, and it is stopped.
    expect(judgesMade.at(-1)?.workDir).not.toBe(runtime.workDir);
  });

  it("scores 0 when the tests say so, whatever reward file the agent planted", async () => {
    const failing = TEST_SH.replace("= ok", "= never");
    const ev = await harbor.evaluate(
      trajectory,
      ctx({ tests: { "test.sh": failing, "check.py": CHECK_PY } }),
    );
    expect(ev.outcome_reward).toBe(0);
  });

  it("reads reward.json (its `reward` key, or reward_key)", async () => {
    const sh = `echo '{"reward": 0.25, "speed": 0.75}' > /logs/verifier/reward.json\n`;
    expect((await harbor.evaluate(trajectory, ctx({ tests: { "test.sh": sh } }))).outcome_reward).toBe(0.25);
    const speed = await harbor.evaluate(trajectory, ctx({ tests: { "test.sh": sh }, reward_key: "speed" }));
    expect(speed.outcome_reward).toBe(0.75);
    expect(speed.metadata.rewards).toEqual({ reward: 0.25, speed: 0.75 });
  });

  it("fails the evaluation when the tests write no reward, as a Harbor trial fails", async () => {
    const err = await harbor
      .evaluate(trajectory, ctx({ tests: { "test.sh": "echo broken >&2; exit 3\n" } }))
      .catch((e) => e);
    expect((err as Error).message).toBe(
      "the tests wrote neither /logs/verifier/reward.json nor /logs/verifier/reward.txt (test.sh exited 3: broken)",
    );
  });

  it("maps a WORKDIR other than /app and passes the task's env", async () => {
    const sh = `[ -f /srv/x/hello.txt ] && [ "$MODE" = strict ] && echo 1 > /logs/verifier/reward.txt\n`;
    const ev = await harbor.evaluate(
      trajectory,
      ctx({ tests: { "test.sh": sh }, workdir: "/srv/x", env: { MODE: "strict" } }),
    );
    expect(ev.outcome_reward).toBe(1);
  });

  it("refuses a config without test.sh, naming the field", async () => {
    await expect(harbor.evaluate(trajectory, ctx({ tests: { "x.sh": "" } }))).rejects.toThrow(
      /evaluator.config \(harbor\): tests: must hold "test.sh"/,
    );
  });
});

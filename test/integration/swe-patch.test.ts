import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvaluationContext } from "../../batch-runner/evaluation/evaluator.ts";
import { freshRuntimes } from "../../batch-runner/evaluation/fresh-runtime.ts";
import { swePatch } from "../../batch-runner/evaluation/swe-patch.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import { buildBuggyRepo, EDITS, SWE_CONFIG } from "./swe-patch-fixture.ts";

let root: string;
let fixture: { dir: string; prepare: string[] };
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-swe-"));
  fixture = await buildBuggyRepo();
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(fixture.dir, { recursive: true, force: true });
});

const trajectory = { status: "COMPLETED", traces: [] } as unknown as Trajectory;

/** An agent runtime prepared from the fixture, `edit` run in it, then swe_patch with a prewarmed fresh runtime. */
async function evaluateEdit(edit: string, config: Record<string, unknown> = SWE_CONFIG) {
  const source = (sessionId: string, prewarm: boolean) =>
    freshRuntimes({
      factory: processRuntimeFactory({ sessionsRoot: root }),
      spec: { sessionId, env: {}, limits: {}, proxyUrl: "http://127.0.0.1:9" },
      prepare: fixture.prepare,
      timeoutMs: 30_000,
      prewarm,
    });
  const agentSide = source("agent", false);
  const evalSide = source("agent.eval", true);
  const runtime = await agentSide.get();
  try {
    const res = await runtime.exec(["sh", "-c", edit]);
    expect(res.exitCode, res.stderr).toBe(0);
    const ctx: EvaluationContext = {
      runtime,
      workDir: runtime.workDir,
      agent: { exitCode: 0, timedOut: false, finalAnswer: null },
      timeoutMs: 60_000,
      config,
      freshRuntime: () => evalSide.get(),
    };
    return { evaluation: await swePatch.evaluate(trajectory, ctx), runtime };
  } finally {
    await agentSide.dispose();
    await evalSide.dispose();
  }
}

describe("swe_patch on a repository fixture", () => {
  it("rewards 1 when the patch fixes the bug and the other test still passes", async () => {
    const { evaluation } = await evaluateEdit(EDITS.fix);
    expect(evaluation.metadata.reason).toBeUndefined();
    expect(evaluation.outcome_reward).toBe(1);
    expect(evaluation.metadata.fail_to_pass).toEqual({ "add adds": "PASS" });
    expect(evaluation.metadata.pass_to_pass).toEqual({ "mul multiplies": "PASS" });
    expect(evaluation.metadata.patch).toMatch(/- {2}return a - b;\n\+ {2}return a \+ b;/);
  });

  it("carries new files in the patch", async () => {
    const edit = [
      "printf 'export const plus = (a, b) => a + b;\\n' > src/plus.mjs",
      "sed -i '1i import { plus } from \"./plus.mjs\";' src/math.mjs",
      "sed -i 's/return a - b;/return plus(a, b);/' src/math.mjs",
    ].join(" && ");
    const { evaluation } = await evaluateEdit(edit);
    expect(evaluation.metadata.patch).toMatch(/new file mode 100644\n[\s\S]*\+export const plus/);
    expect(evaluation.outcome_reward).toBe(1);
  });

  it("rewards 0 when the patch breaks a pass-to-pass test", async () => {
    const { evaluation } = await evaluateEdit(EDITS.fixButBreakMul);
    expect(evaluation.outcome_reward).toBe(0);
    expect(evaluation.metadata.fail_to_pass).toEqual({ "add adds": "PASS" });
    expect(evaluation.metadata.pass_to_pass).toEqual({ "mul multiplies": "FAIL" });
    expect(evaluation.metadata.reason).toMatch(/pass_to_pass broken: mul multiplies \(FAIL\)/);
  });

  it("rewards 0 with git's reason when the patch does not apply in the fresh runtime", async () => {
    const { evaluation } = await evaluateEdit(EDITS.fixAndTouchStamp);
    expect(evaluation.outcome_reward).toBe(0);
    expect(evaluation.metadata.stage).toBe("apply");
    expect(evaluation.metadata.reason).toMatch(/git apply failed.*stamp\.txt/s);
  });

  it("rewards 0 for an empty patch, and ignores edits to excluded paths", async () => {
    const { evaluation } = await evaluateEdit("echo 'test(\"add adds\", () => {});' >> tests/mul.test.mjs");
    expect(evaluation.outcome_reward).toBe(0);
    expect(evaluation.metadata.reason).toMatch(/empty patch/);
  });

  it("runs the test command once per test with {{test}}", async () => {
    const perTest = {
      ...SWE_CONFIG,
      test_command: "node --test --test-name-pattern={{test}}",
    };
    const { evaluation } = await evaluateEdit(EDITS.fixButBreakMul, perTest);
    expect(evaluation.metadata.fail_to_pass).toEqual({ "add adds": "PASS" });
    expect(evaluation.metadata.pass_to_pass).toEqual({ "mul multiplies": "FAIL" });
    expect(evaluation.outcome_reward).toBe(0);
  });
});

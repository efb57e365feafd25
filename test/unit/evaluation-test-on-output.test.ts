import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvaluationContext } from "../../batch-runner/evaluation/evaluator.ts";
import { testOnOutput } from "../../batch-runner/evaluation/test-on-output.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";

let root: string;
let runtime: Runtime;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-eval-too-"));
  runtime = await processRuntimeFactory({ sessionsRoot: root }).create({
    sessionId: "eval-s1",
    env: {},
    limits: {},
    proxyUrl: "http://127.0.0.1:9",
  });
  // What an agent left behind.
  await writeFile(join(runtime.workDir, "answer.txt"), "alpha\nbeta\n");
  await writeFile(join(runtime.workDir, "result.json"), '{"b": [1, 2], "a": "x"}\n');
});
afterAll(async () => {
  await runtime.stop();
  await rm(root, { recursive: true, force: true });
});

const trajectory = { status: "COMPLETED", traces: [] } as unknown as Trajectory;
function ctx(config: Record<string, unknown>): EvaluationContext {
  return {
    runtime,
    workDir: runtime.workDir,
    agent: { exitCode: 0, timedOut: false, finalAnswer: "done" },
    timeoutMs: 20_000,
    config,
    // A real fresh runtime each time, as the pipeline builds one (same factory, empty dirs).
    freshRuntime: () =>
      processRuntimeFactory({ sessionsRoot: root }).create({
        sessionId: `eval-judge-${++judges}`,
        env: {},
        limits: {},
        proxyUrl: "http://127.0.0.1:9",
      }),
  };
}
let judges = 0;

describe("test_on_output", () => {
  it("scores by exit code", async () => {
    const pass = await testOnOutput.evaluate(trajectory, ctx({ command: "grep -qx beta answer.txt" }));
    expect(pass.outcome_reward).toBe(1);
    expect(pass.metadata.mode).toBe("exit_code");
    const fail = await testOnOutput.evaluate(trajectory, ctx({ command: "grep -qx gamma answer.txt" }));
    expect(fail.outcome_reward).toBe(0);
    expect(fail.metadata.exit_code).toBe(1);
    expect(fail.metadata.reason).toMatch(/exit code 1, expected 0/);
  });

  it("scores by expected lines, all-or-nothing or partial", async () => {
    const all = await testOnOutput.evaluate(
      trajectory,
      ctx({ command: "cat answer.txt", expected_lines: ["alpha", "beta"] }),
    );
    expect(all.outcome_reward).toBe(1);
    const missing = await testOnOutput.evaluate(
      trajectory,
      ctx({ command: "cat answer.txt", expected_lines: ["alpha", "gamma"] }),
    );
    expect(missing.outcome_reward).toBe(0);
    expect(missing.metadata.missing_lines).toEqual(["gamma"]);
    const partial = await testOnOutput.evaluate(
      trajectory,
      ctx({ command: "cat answer.txt", expected_lines: ["alpha", "gamma"], partial_credit: true }),
    );
    expect(partial.outcome_reward).toBe(0.5);
  });

  it("scores by expected JSON, key order aside", async () => {
    const same = await testOnOutput.evaluate(
      trajectory,
      ctx({ command: "echo checking; cat result.json", expected_json: { a: "x", b: [1, 2] } }),
    );
    expect(same.outcome_reward).toBe(1);
    const differ = await testOnOutput.evaluate(
      trajectory,
      ctx({ command: "cat result.json", expected_json: { a: "y", b: [1, 2] } }),
    );
    expect(differ.outcome_reward).toBe(0);
    const notJson = await testOnOutput.evaluate(
      trajectory,
      ctx({ command: "cat answer.txt", expected_json: 1 }),
    );
    expect(notJson.outcome_reward).toBe(0);
    expect(notJson.metadata.reason).toBe("stdout is not JSON");
  });

  it("copies its files in before the command runs", async () => {
    const res = await testOnOutput.evaluate(
      trajectory,
      ctx({
        command: "sh checks/check.sh",
        files: { "checks/check.sh": "grep -qx alpha answer.txt && echo CHECKED" },
        expected_lines: ["CHECKED"],
      }),
    );
    expect(res.outcome_reward).toBe(1);
    expect(res.metadata.files).toEqual(["checks/check.sh"]);
  });

  it("judges in a fresh runtime holding only the declared outputs, regular files only", async () => {
    await mkdir(join(runtime.workDir, "out"), { recursive: true });
    await writeFile(join(runtime.workDir, "out", "kept.txt"), "kept\n");
    // An output that names the judge's own file, and git metadata the agent controls.
    await symlink("expected.txt", join(runtime.workDir, "out", "linked.txt"));
    await mkdir(join(runtime.workDir, ".git"), { recursive: true });
    await writeFile(join(runtime.workDir, ".git", "config"), "[core]\n\tfsmonitor = evil\n");
    const res = await testOnOutput.evaluate(
      trajectory,
      ctx({
        command: `pwd; ls -A; ls -A out; test "$HOME" != "${runtime.homeDir}" && echo OTHER-HOME`,
        outputs: ["out", "missing.txt"],
      }),
    );
    const stdout = String(res.metadata.stdout);
    expect(stdout).not.toContain(runtime.workDir);
    expect(stdout.split("\n")).toEqual(expect.arrayContaining(["out", "kept.txt", "OTHER-HOME"]));
    // Neither the undeclared answer.txt, nor the link, nor .git.
    expect(stdout).not.toMatch(/answer\.txt|linked\.txt|\.git/);
    expect(res.metadata.runtime).toBe("fresh");
    expect(res.metadata.outputs).toEqual(["out"]);
    expect(res.metadata.outputs_skipped).toEqual(["out/linked.txt: a symlink (to expected.txt), not copied"]);
    const all = await testOnOutput.evaluate(trajectory, ctx({ command: "ls -A" }));
    expect(String(all.metadata.stdout).split("\n")).toEqual(expect.arrayContaining(["answer.txt", "out"]));
    expect(String(all.metadata.stdout)).not.toContain(".git");
  });

  it("runs in the agent's own runtime only when the task says it trusts it", async () => {
    const res = await testOnOutput.evaluate(trajectory, ctx({ command: "pwd", trust_agent_runtime: true }));
    expect(String(res.metadata.stdout).trim()).toBe(runtime.workDir);
    expect(res.metadata.runtime).toBe("agent");
  });

  it("refuses a bad config with the field named", async () => {
    await expect(testOnOutput.evaluate(trajectory, ctx({}))).rejects.toThrow(/test_on_output.*command/);
    await expect(
      testOnOutput.evaluate(trajectory, ctx({ command: "true", files: { "../escape.txt": "x" } })),
    ).rejects.toThrow(/must not contain '\.\.'/);
  });
});

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyAgentOutputs, packageInitsAbove } from "../../batch-runner/evaluation/agent-outputs.ts";
import { rewardFiles } from "../../batch-runner/evaluation/harbor-reward-files.ts";
import { importHarborTask } from "../../batch-runner/harbor/import-task.ts";
import { globMatcher, globsNamedIn } from "../../batch-runner/harbor/path-globs.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import { RUNNER_CONFIG_FILES } from "../../shared/schemas/task-settings.ts";

/*
 * Issue 41, item 11: what of the agent's outputs reaches the judge. Runner config never does, and
 * nothing the judge's prepare steps built is replaced or added to unless the task says so.
 * (The end-to-end tricks are in test/security/reward-hacking-cases.ts.)
 */
let root: string;
let n = 0;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-agent-outputs-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function runtime(files: Record<string, string>): Promise<Runtime> {
  const rt = await processRuntimeFactory({ sessionsRoot: root }).create({
    sessionId: `outputs-${++n}`,
    env: {},
    limits: {},
    proxyUrl: "http://127.0.0.1:9",
  });
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(rt.workDir, path)), { recursive: true });
    await writeFile(join(rt.workDir, path), text);
  }
  return rt;
}

const read = (rt: Runtime, path: string) => readFile(join(rt.workDir, path), "utf8").catch(() => null);

describe("copyAgentOutputs", () => {
  const agentFiles = {
    "answer.txt": "5\n",
    "conftest.py": "evil",
    "pytest.ini": "evil",
    "sub/package.json": "evil",
    Makefile: "evil",
    GNUmakefile: "evil",
    ".venv/lib/site-packages/zz.pth": "evil",
    ".venv/lib/site-packages/pytest.py": "evil",
    "src/new.py": "new",
    "src/old.py": "changed",
  };
  const built = { Makefile: "built", ".venv/lib/site-packages/base.pth": "built", "src/old.py": "built" };

  it("leaves runner config behind and replaces or adds to nothing the prepare steps built", async () => {
    const agent = await runtime(agentFiles);
    const judge = await runtime(built);
    const copied = await copyAgentOutputs(agent, judge, ["."], { denied: RUNNER_CONFIG_FILES, replace: [] });
    expect(await read(judge, "answer.txt")).toBe("5\n");
    expect(await read(judge, "src/new.py")).toBeNull();
    expect(await read(judge, "src/old.py")).toBe("built");
    expect(await read(judge, "Makefile")).toBe("built");
    for (const path of [
      "conftest.py",
      "pytest.ini",
      "sub/package.json",
      "GNUmakefile",
      ".venv/lib/site-packages/pytest.py",
    ])
      expect(await read(judge, path), path).toBeNull();
    expect(copied.skipped).toEqual(
      expect.arrayContaining([
        "conftest.py: test-runner config or package scripts (outputs_denied), not copied",
        "src/old.py: it would replace what the judge's prepare steps built (outputs_replace), not copied",
        ".venv/lib/site-packages/pytest.py: it would add to a directory the judge's prepare steps built (outputs_replace), not copied",
      ]),
    );
  });

  it("lets the task say what may replace: outputs_replace globs, or an output path it names", async () => {
    const agent = await runtime(agentFiles);
    const judge = await runtime(built);
    await copyAgentOutputs(agent, judge, [".", "Makefile"], { denied: [], replace: ["src/**"] });
    expect(await read(judge, "Makefile")).toBe("evil");
    expect(await read(judge, "src/new.py")).toBe("new");
    expect(await read(judge, "src/old.py")).toBe("changed");
    expect(await read(judge, "conftest.py")).toBe("evil");
    expect(await read(judge, ".venv/lib/site-packages/zz.pth")).toBeNull();
  });

  it("treats a declared directory like the work dir: new files go in, what was built stays", async () => {
    const agent = await runtime({ "src/new.py": "new", "src/old.py": "changed" });
    const judge = await runtime({ "src/old.py": "built" });
    await copyAgentOutputs(agent, judge, ["src"], { denied: [], replace: [] });
    expect(await read(judge, "src/new.py")).toBe("new");
    expect(await read(judge, "src/old.py")).toBe("built");
  });
});

describe("packageInitsAbove", () => {
  it("names the __init__.py of each judge file's dir and every dir above it, glob characters escaped", () => {
    expect(packageInitsAbove(["check.py", "tests/unit/test_x.py", "we*rd/t.py"])).toEqual([
      "__init__.py",
      "tests/__init__.py",
      "tests/unit/__init__.py",
      "we[*]rd/__init__.py",
    ]);
    const denied = globMatcher(packageInitsAbove(["we*rd/t.py"]));
    expect(denied("we*rd/__init__.py")).toBe(true);
    expect(denied("weird/__init__.py")).toBe(false);
  });
});

describe("globMatcher (git's :(glob) rules)", () => {
  it("matches at the top and below, one component per star", () => {
    const m = globMatcher(["**/conftest.py", "**/.mocharc*", "**/__pycache__/**", "tests/**"]);
    expect(m("conftest.py")).toBe(true);
    expect(m("a/b/conftest.py")).toBe(true);
    expect(m("a/.mocharc.json")).toBe(true);
    expect(m("x/__pycache__/m.pyc")).toBe(true);
    expect(m("tests/a/b.py")).toBe(true);
    expect(m("src/tests.py")).toBe(false);
    expect(m("myconftest.py")).toBe(false);
  });
});

describe("harbor rewardFiles (issue 41, item 13; issue 49)", () => {
  it("reads only the reward file names the task's tests mention", async () => {
    expect(await rewardFiles({ "test.sh": "echo 1 > /logs/verifier/reward.txt" })).toEqual(["reward.txt"]);
    expect(
      await rewardFiles({ "test.sh": "python3 /tests/t.py", "t.py": "open('/logs/verifier/reward.json')" }),
    ).toEqual(["reward.json"]);
    expect(await rewardFiles({ "test.sh": "bash run.sh" })).toEqual(["reward.json", "reward.txt"]);
  });

  it("reads tests held on the runner's host too, a name split across its read chunks included", async () => {
    const dir = join(root, "host-tests");
    await mkdir(dir, { recursive: true });
    const policy = { allowed: [dir], denied: [] };
    await writeFile(join(dir, "judge.sh"), 'echo 1 > "$V/reward.txt"\n');
    // Before issue 49 any host-held test made both names count: an agent-written reward.json won.
    expect(
      await rewardFiles(
        { "test.sh": "source /tests/judge.sh", "judge.sh": { from: join(dir, "judge.sh") } },
        policy,
      ),
    ).toEqual(["reward.txt"]);
    await writeFile(join(dir, "big.py"), `${"x".repeat((1 << 20) - 7)}reward.json\n`);
    expect(
      await rewardFiles({ "test.sh": "python3 big.py", "big.py": { from: join(dir, "big.py") } }, policy),
    ).toEqual(["reward.json"]);
    await writeFile(join(dir, "none.sh"), "exit 0\n");
    expect(await rewardFiles({ "test.sh": { from: join(dir, "none.sh") } }, policy)).toEqual([
      "reward.json",
      "reward.txt",
    ]);
    // A host path the runner does not allow is refused, as its copy is.
    await expect(rewardFiles({ "test.sh": { from: "/etc/passwd" } }, policy)).rejects.toThrow(/is refused/);
  });
});

describe("runner config a Harbor task asks for", () => {
  it("is named by its instruction or tests: found whole, in paths, not in other words", () => {
    const named = globsNamedIn(
      RUNNER_CONFIG_FILES,
      "Write a Makefile. Then check /app/pkg/x.pth and ~/.cargo/config.toml; the Makefiles dir is not one.",
    );
    expect(named).toEqual(["**/*.pth", "**/Makefile", "**/.cargo/**"]);
    expect(globsNamedIn(RUNNER_CONFIG_FILES, "Print the sum of the numbers in /app/input.txt")).toEqual([]);
  });

  it("reaches the tests when the task names it: import-harbor narrows outputs_denied, with a warning", async () => {
    const dir = join(root, "make-task");
    const files: Record<string, string> = {
      "task.toml": 'schema_version = "1.4"\n',
      "instruction.md": "Write /app/Makefile so that `make` builds hello.\n",
      "environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n",
      "tests/test.sh": "cd /app && make && echo 1 > /logs/verifier/reward.txt\n",
    };
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    const { task, warnings } = await importHarborTask(dir, {
      agent: { harness: "shell", settings: { command: "true" } },
    });
    const config = (task.evaluator as { config: Record<string, unknown> }).config;
    expect(config.outputs_denied).toEqual(RUNNER_CONFIG_FILES.filter((g) => g !== "**/Makefile"));
    expect(warnings.join("\n")).toContain("**/Makefile: named by the instruction or the tests");
  });
});

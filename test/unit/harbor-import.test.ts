import { spawnSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDockerfile } from "../../batch-runner/harbor/dockerfile.ts";
import { rewritePaths } from "../../batch-runner/harbor/harbor-paths.ts";
import { HarborTaskRefused } from "../../batch-runner/harbor/harbor-refusal.ts";
import { parseHarborReward } from "../../batch-runner/harbor/harbor-reward.ts";
import { importHarborTask } from "../../batch-runner/harbor/import-task.ts";
import { validateTask } from "../../shared/tasks/validate-task.ts";
import { harborPython } from "../support/harbor-venv.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const agent = { harness: "shell", settings: { command: "true" } };

/** A Terminal-Bench 2.0 style task: task.toml, instruction.md, environment/Dockerfile, tests/, solution/. */
const TASK: Record<string, string> = {
  "task.toml": `schema_version = "1.4"
[task]
name = "polar/hello"
[metadata]
difficulty = "easy"
[verifier]
timeout_sec = 120.0
env = { GREETING = "hi" }
[agent]
timeout_sec = 300.0
[environment]
cpus = 1
memory_mb = 2048
storage_mb = 4096
os = "linux"
`,
  "instruction.md": "Create /app/hello.txt containing hi.\n",
  "environment/Dockerfile": "FROM ubuntu:24.04\n# comment\nENV LANG=C.UTF-8 \\\n    TZ=UTC\nWORKDIR /app\n",
  "tests/test.sh":
    '#!/bin/bash\ngrep -qx "$GREETING" /app/hello.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
  "tests/helper.py": "print('/tests/helper.py')\n",
  "solution/solve.sh": "echo hi > /app/hello.txt\n",
};

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-harbor-import-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

let n = 0;
async function taskDir(change: Record<string, string | null> = {}): Promise<string> {
  const dir = join(root, `task-${++n}`);
  const files = { ...TASK, ...change };
  for (const [path, text] of Object.entries(files)) {
    if (text === null) continue;
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

async function refusal(dir: string): Promise<string> {
  const err = await importHarborTask(dir, { agent }).catch((e) => e);
  expect(err).toBeInstanceOf(HarborTaskRefused);
  return (err as Error).message;
}

describe("importHarborTask", () => {
  it("maps the layout to a TaskRequest the task check accepts", async () => {
    const dir = await taskDir();
    const { task, warnings } = await importHarborTask(dir, { agent, numSamples: 2 });
    expect(warnings).toEqual([]);
    expect(validateTask(task).ok).toBe(true);
    expect(task).toMatchObject({
      task_id: `task-${n}`,
      instruction: "Create ./hello.txt containing hi.",
      num_samples: 2,
      timeout_seconds: 300,
      runtime: { env: { LANG: "C.UTF-8", TZ: "UTC" }, limits: { cpus: 1, memory_mb: 2048, disk_mb: 4096 } },
      evaluator: {
        strategy: "harbor",
        config: {
          workdir: "/app",
          timeout_seconds: 120,
          env: { GREETING: "hi" },
          tests: { "test.sh": TASK["tests/test.sh"], "helper.py": TASK["tests/helper.py"] },
        },
      },
      metadata: { harbor: { from: "ubuntu:24.04", solution: true, metadata: { difficulty: "easy" } } },
    });
    // The solution never reaches the task the agent gets.
    expect(JSON.stringify(task)).not.toContain("solve.sh");
  });

  it.each([
    [
      { "environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\nRUN apt-get install -y curl\n" },
      /^environment\/Dockerfile:3: RUN needs an image built from this Dockerfile/,
    ],
    [
      { "environment/Dockerfile": "FROM a AS b\nFROM c\nWORKDIR /app\n" },
      /^environment\/Dockerfile:2: a multi-stage build/,
    ],
    [{ "environment/Dockerfile": "FROM ubuntu:24.04\n" }, /^environment\/Dockerfile: no WORKDIR/],
    [
      { "environment/docker-compose.yaml": "services: {}\n" },
      /^environment\/docker-compose.yaml: multi-container environments are not supported$/,
    ],
    [{ "environment/requirements.txt": "x\n" }, /^environment\/requirements.txt: no image is built/],
    [{ "tests/Dockerfile": "FROM x\n" }, /^tests\/Dockerfile: a separate verifier image is not built/],
    [{ "tests/test.sh": null }, /^tests\/test.sh: missing$/],
    [{ "instruction.md": null }, /^instruction.md: missing/],
    [{ "instruction.md": "\n" }, /^instruction.md: empty/],
    [{ "trajectory.json": "{}" }, /^trajectory.json: prior agent context/],
    [
      { "task.toml": `${TASK["task.toml"]}[[steps]]\nname = "one"\n` },
      /^task.toml: steps = .*multi-step tasks are not supported/,
    ],
    [
      { "task.toml": 'verifier.environment_mode = "separate"\n' },
      /^task.toml: verifier.environment_mode = "separate": a separate verifier environment/,
    ],
    [
      { "task.toml": 'environment.network_mode = "allowlist"\n' },
      /^task.toml: environment.network_mode = "allowlist": a Polar sandbox has no network/,
    ],
    [
      { "task.toml": 'environment.docker_image = "x"\n' },
      /^task.toml: environment.docker_image = "x": a prebuilt image is not used/,
    ],
    [{ "task.toml": "agent.timeout = 3\n" }, /^task.toml: agent: Unrecognized key: "timeout"/],
    [{ "task.toml": "agent = [\n" }, /^task.toml: not valid TOML/],
  ])("refuses %j with the file and the reason", async (change, message) => {
    expect(await refusal(await taskDir(change))).toMatch(message);
  });

  it("converts Harbor's default network_mode with a warning, recorded in the task", async () => {
    const dir = await taskDir({ "task.toml": 'environment.network_mode = "public"\n' });
    const { task, warnings } = await importHarborTask(dir, { agent });
    expect(warnings).toEqual([
      "task.toml: environment.network_mode asks for the internet; the sandbox has none (only the model proxy)",
    ]);
    expect((task.metadata as { harbor: { warnings: string[] } }).harbor.warnings).toEqual(warnings);
  });
});

describe("Harbor's own tasks", () => {
  const harbor = harborPython();
  it.skipIf(harbor.problem !== null)(
    "refuses the installed package's template-task dir, naming the variant dirs",
    async () => {
      if (harbor.problem !== null) return;
      const site = spawnSync(
        harbor.python,
        ["-c", "import harbor, os; print(os.path.dirname(harbor.__file__))"],
        {
          encoding: "utf8",
        },
      ).stdout.trim();
      const copy = join(root, "template-task");
      await cp(join(site, "cli", "template-task"), copy, { recursive: true });
      expect(await refusal(copy)).toBe("pytest-tests: not part of the Harbor task layout Polar reads");
    },
  );

  it.skipIf(harbor.problem !== null)(
    "converts a task `harbor task init` made, once its author filled it in",
    async () => {
      if (harbor.problem !== null) return;
      const made = spawnSync(
        harbor.harbor,
        ["task", "init", "polar/greet", "--verifier-mode", "shared", "--no-pytest", "-p", root],
        {
          encoding: "utf8",
          env: { ...process.env, NO_COLOR: "1" },
        },
      );
      expect(made.status, made.stderr).toBe(0);
      const dir = join(root, "greet");
      // As scaffolded, there is nothing to do yet.
      expect(await refusal(dir)).toBe("instruction.md: empty (the agent would get no task)");
      await writeFile(join(dir, "instruction.md"), "Write hi to /app/out.txt\n");
      const { task, warnings } = await importHarborTask(dir, { agent });
      expect(validateTask(task).ok).toBe(true);
      expect(warnings).toEqual([
        "task.toml: environment.network_mode asks for the internet; the sandbox has none (only the model proxy)",
      ]);
      expect(task.instruction).toBe("Write hi to ./out.txt");
    },
  );

  it.skipIf(harbor.problem !== null)(
    "runs a `harbor task init` task end to end with `polar run`: Harbor's tests score the agent",
    async () => {
      if (harbor.problem !== null) return;
      const made = spawnSync(
        harbor.harbor,
        ["task", "init", "polar/write-hi", "--verifier-mode", "shared", "--no-pytest", "-p", root],
        {
          encoding: "utf8",
          env: { ...process.env, NO_COLOR: "1" },
        },
      );
      expect(made.status, made.stderr).toBe(0);
      const dir = join(root, "write-hi");
      // What a task author fills in; the polar-script block drives the dry-run policy.
      await writeFile(
        join(dir, "instruction.md"),
        "Write hi to /app/out.txt\n\n```polar-script\nshell: echo hi > out.txt\nsay: done\n```\n",
      );
      await writeFile(
        join(dir, "tests", "test.sh"),
        "#!/bin/bash\nif grep -qx hi /app/out.txt; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
      );
      const mini = {
        harness: "shell",
        settings: { command: "node {{polar_root}}/examples/agents/mini-agent.mjs {{instruction}}" },
      };
      const { task } = await importHarborTask(dir, { agent: mini, numSamples: 1 });
      const tasks = join(root, "harbor-tasks.jsonl");
      await writeFile(tasks, `${JSON.stringify(task)}\n`);
      const out = join(root, "harbor-run");
      const run = spawnSync("node", ["bin/polar.js", "run", tasks, "--out", out], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 120_000,
      });
      expect(run.status, run.stderr + run.stdout).toBe(0);
      const result = JSON.parse(
        await readFile(join(out, "store", "results", "write-hi", "write-hi-0.json"), "utf8"),
      );
      expect(result).toMatchObject({ status: "COMPLETED", reward: 1 });
      expect(result.evaluation).toMatchObject({
        evaluator: "harbor",
        metadata: { reward_from: "reward.txt", workdir: "/app" },
      });
    },
  );
});

describe("Harbor's path and reward rules", () => {
  it("rewrites whole container paths only", () => {
    const map = { "/tests": "/h/harbor/tests", "/logs": "/h/harbor/logs", "/app": "/w" };
    expect(rewritePaths('pytest /tests/test_outputs.py > /logs/verifier/x; cat "/app/a" /app', map)).toBe(
      'pytest /h/harbor/tests/test_outputs.py > /h/harbor/logs/verifier/x; cat "/w/a" /w',
    );
    expect(rewritePaths("/testsuite /a/tests /application ./tests", map)).toBe(
      "/testsuite /a/tests /application ./tests",
    );
  });

  it("reads ENV in both forms and refuses WORKDIR with variables", () => {
    expect(readDockerfile('FROM x\nENV A 1 2\nENV B="x y" C=3\nWORKDIR /srv/app/\n')).toEqual({
      from: "x",
      workdir: "/srv/app",
      env: { A: "1 2", B: "x y", C: "3" },
    });
    expect(() => readDockerfile("FROM x\nWORKDIR $HOME\n")).toThrow(/WORKDIR \$HOME: only an absolute path/);
  });

  it("takes reward.json over reward.txt, its `reward` key or its only key, as Harbor does", () => {
    expect(parseHarborReward({ json: '{"reward": 0.5, "style": 1}', text: "1" }, "reward")).toMatchObject({
      reward: 0.5,
      from: "reward.json",
    });
    expect(parseHarborReward({ json: '{"accuracy": 0.25}', text: null }, "reward").reward).toBe(0.25);
    expect(parseHarborReward({ json: null, text: " 1\n" }, "reward")).toEqual({
      reward: 1,
      rewards: { reward: 1 },
      from: "reward.txt",
    });
    expect(() => parseHarborReward({ json: '{"a": 1, "b": 2}', text: null }, "reward")).toThrow(
      /no "reward" among its 2 rewards \(a, b\)/,
    );
    expect(() => parseHarborReward({ json: null, text: "" }, "reward")).toThrow("reward.txt is empty");
    expect(() => parseHarborReward({ json: null, text: "nan" }, "reward")).toThrow(/not a finite number/);
    expect(() => parseHarborReward({ json: '{"reward": "1"}', text: null }, "reward")).toThrow(
      /not a finite number/,
    );
    expect(() => parseHarborReward({ json: null, text: null }, "reward")).toThrow(
      /neither \/logs\/verifier\/reward.json nor/,
    );
  });
});

describe("polar import-harbor", () => {
  it("writes the converted tasks on stdout, the refusals on stderr, and exits 1 when any was refused", async () => {
    const good = await taskDir();
    const bad = await taskDir({ "environment/Dockerfile": "FROM x\nWORKDIR /app\nCOPY . /app\n" });
    const res = spawnSync(
      "node",
      ["bin/polar.js", "import-harbor", good, bad, "--harness", "shell", "--settings", '{"command": "true"}'],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );
    expect(res.status).toBe(1);
    const lines = res.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]).evaluator.strategy).toBe("harbor");
    expect(res.stderr).toContain(
      `${bad}: refused: environment/Dockerfile:3: COPY needs an image built from this Dockerfile`,
    );
    expect(res.stderr).toContain("1 of 2 tasks converted");
  });
});

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

async function refusal(dir: string, noBuild = false): Promise<string> {
  const err = await importHarborTask(dir, { agent, noBuild }).catch((e) => e);
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
      // Built on the runner from the task's environment/ (image-build.ts); its ENV is the image's.
      runtime: {
        backend: "docker",
        image: `build:${join(dir, "environment")}`,
        env: {},
        limits: { cpus: 1, memory_mb: 2048, disk_mb: 4096 },
      },
      evaluator: {
        strategy: "harbor",
        config: {
          workdir: "/app",
          timeout_seconds: 120,
          env: { GREETING: "hi" },
          tests: { "test.sh": TASK["tests/test.sh"], "helper.py": TASK["tests/helper.py"] },
          // The judge starts from the image's WORKDIR too: the agent's edits of it must reach the tests.
          outputs_replace: ["**/*"],
        },
      },
      metadata: { harbor: { from: "ubuntu:24.04", solution: true, metadata: { difficulty: "easy" } } },
    });
    // The solution never reaches the task the agent gets.
    expect(JSON.stringify(task)).not.toContain("solve.sh");
  });

  it("with --no-build, runs in the runner's runtime: ENV into runtime.env, no backend", async () => {
    const { task } = await importHarborTask(await taskDir(), { agent, noBuild: true });
    expect(task.runtime).toEqual({
      env: { LANG: "C.UTF-8", TZ: "UTC" },
      limits: { cpus: 1, memory_mb: 2048, disk_mb: 4096 },
    });
  });

  it.each([
    [
      { "environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\nRUN apt-get install -y curl\n" },
      /^environment\/Dockerfile:3: RUN needs an image built from this Dockerfile, and --no-build builds none/,
    ],
    [
      { "environment/Dockerfile": "FROM a AS b\nFROM c\nWORKDIR /app\n" },
      /^environment\/Dockerfile:2: a multi-stage build/,
    ],
    [{ "environment/requirements.txt": "x\n" }, /^environment\/requirements.txt: --no-build builds no image/],
  ])("with --no-build, refuses %j with the file and the reason", async (change, message) => {
    expect(await refusal(await taskDir(change), true)).toMatch(message);
  });

  it("reads the build's Dockerfile for its final stage's WORKDIR and every base image", async () => {
    const dir = await taskDir({
      "environment/Dockerfile":
        'FROM debian:12 AS tools\nWORKDIR /opt\nRUN make\nFROM --platform=linux/amd64 ubuntu:24.04\nCOPY --from=tools /opt/x /usr/bin/x\nCOPY data/ /srv/data/\nUSER nobody\nENTRYPOINT ["/entry.sh"]\nWORKDIR /srv\n',
      "environment/data/input.txt": "x\n",
    });
    const { task } = await importHarborTask(dir, { agent });
    expect(task.evaluator).toMatchObject({ config: { workdir: "/srv" } });
    expect(task.metadata).toMatchObject({
      harbor: { from: "ubuntu:24.04", bases: ["debian:12", "ubuntu:24.04"] },
    });
  });

  it("takes `version` as `schema_version`, as Harbor's TaskConfig does (schema_version wins)", async () => {
    const old = await importHarborTask(await taskDir({ "task.toml": 'version = "1.0"\n' }), { agent });
    expect(old.task.metadata).toMatchObject({ harbor: { schema_version: "1.0" } });
    const both = await importHarborTask(
      await taskDir({ "task.toml": 'version = "1.0"\nschema_version = "1.4"\n' }),
      { agent },
    );
    expect(both.task.metadata).toMatchObject({ harbor: { schema_version: "1.4" } });
  });

  it("runs environment.docker_image as it is: no Dockerfile needed, WORKDIR from task.toml", async () => {
    const dir = await taskDir({
      "task.toml": '[environment]\ndocker_image = "registry.example/tb/task:1"\nworkdir = "/app"\n',
      "environment/Dockerfile": null,
    });
    const { task } = await importHarborTask(dir, { agent });
    expect(validateTask(task).ok).toBe(true);
    // Run as a built image is (ENTRYPOINT kept, WORKDIR the work dir's start), without a build.
    expect(task.runtime).toMatchObject({ backend: "docker", image: "prebuilt:registry.example/tb/task:1" });
    expect(task.evaluator).toMatchObject({ config: { outputs_replace: ["**/*"] } });
    const bare = await taskDir({
      "task.toml": '[environment]\ndocker_image = "x"\n',
      "environment/Dockerfile": null,
    });
    expect(await refusal(bare)).toMatch(/^task.toml: environment.docker_image without environment.workdir/);
    // Issue 49: Polar's own references are not images.
    for (const image of ["build:/etc", "prebuilt:x"]) {
      const ref = await taskDir({
        "task.toml": `[environment]\ndocker_image = "${image}"\nworkdir = "/app"\n`,
      });
      expect(await refusal(ref)).toMatch(/environment.docker_image .* is one of Polar's build references/);
    }
  });

  it("refuses a directory without task.toml naming task.toml, not what else it holds", async () => {
    const dir = await taskDir({ "task.toml": null, "readme.md": "a collection, not a task\n" });
    expect(await refusal(dir)).toMatch(/^task.toml: missing \(not a Harbor task directory/);
  });

  it("tolerates a job's config.yaml and metrics/ beside the task, with a warning", async () => {
    const dir = await taskDir({ "config.yaml": "metrics: []\n", "metrics/score.py": "print(1)\n" });
    const { warnings } = await importHarborTask(dir, { agent });
    expect(warnings).toEqual([
      "config.yaml: a Harbor job's file beside the task, not read",
      "metrics: a Harbor job's file beside the task, not read",
    ]);
  });

  it("warns when the network is left to Harbor's default and the tests download their tools", async () => {
    const installs = await taskDir({
      "tests/test.sh":
        "#!/bin/bash\napt-get update\napt-get install -y curl\necho 1 > /logs/verifier/reward.txt\n",
    });
    expect((await importHarborTask(installs, { agent })).warnings).toEqual([
      expect.stringMatching(
        /^task.toml: no network setting \(Harbor's default is the internet\) and the tests download tools \("apt-get install"\)/,
      ),
    ]);
    const curl = await taskDir({ "tests/test.sh": "curl -LsSf https://x/install.sh | sh\n" });
    expect((await importHarborTask(curl, { agent })).warnings).toHaveLength(1);
    // Tests that need nothing from the network, or a task that says it has none: no warning.
    expect((await importHarborTask(await taskDir(), { agent })).warnings).toEqual([]);
    const off = await taskDir({
      "task.toml": '[environment]\nnetwork_mode = "no-network"\n',
      "tests/test.sh": "apt-get install -y curl\n",
    });
    expect((await importHarborTask(off, { agent })).warnings).toEqual([]);
  });

  it("copies skills_dir into the harness's skills dir at INIT, as Harbor's agents do; warns for a harness without one", async () => {
    const dir = await taskDir({ "task.toml": '[environment]\nskills_dir = "/skills"\n' });
    const claude = await importHarborTask(dir, { agent: { harness: "claude_code" } });
    expect(claude.warnings).toEqual([]);
    expect((claude.task.runtime as { prepare: string[] }).prepare).toEqual([
      `if [ -d '/skills' ]; then mkdir -p "$HOME/.claude/skills" && cp -R '/skills/.' "$HOME/.claude/skills/"; fi`,
    ]);
    const codex = await importHarborTask(dir, { agent: { harness: "codex" } });
    expect((codex.task.runtime as { prepare: string[] }).prepare[0]).toContain('"$HOME/.agents/skills/"');
    const shell = await importHarborTask(dir, { agent });
    expect((shell.task.runtime as { prepare?: string[] }).prepare).toBeUndefined();
    expect(shell.warnings).toEqual([
      'task.toml: environment.skills_dir = "/skills": harness shell reads no skills dir (those that do: claude_code, codex, pi, opencode, cline, hermes); the skills stay in the image at that path',
    ]);
  });

  it.each([
    [{ "environment/Dockerfile": "FROM ubuntu:24.04\n" }, /^environment\/Dockerfile: no WORKDIR/],
    [{ "tests/Dockerfile": "FROM x\n" }, /^tests\/Dockerfile: a separate verifier image is not built/],
    [{ "tests/test.sh": null }, /^tests\/test.sh: missing$/],
    [{ "instruction.md": null }, /^instruction.md: missing/],
    [{ "instruction.md": "\n" }, /^instruction.md: empty/],
    [{ "trajectory.json": "{}" }, /^trajectory.json: prior agent context/],
    [
      { "task.toml": `${TASK["task.toml"]}[[steps]]\nname = "one"\n` },
      /^steps\/one\/instruction.md: missing \(every step has its instruction\)/,
    ],
    [{ "steps/one/instruction.md": "x\n" }, /^steps: task.toml declares no \[\[steps\]\]/],
    [
      { "task.toml": 'verifier.environment = { docker_image = "judge:1" }\n' },
      /^task.toml: verifier.environment = .*a separate verifier image is not built/,
    ],
    [
      { "task.toml": 'environment.network_mode = "allowlist"\n' },
      /^task.toml: environment.network_mode = "allowlist": a Polar sandbox has no network/,
    ],
    [
      { "task.toml": 'artifacts = ["/var/log/app.log"]\n' },
      /^task.toml: artifacts: "\/var\/log\/app.log" is outside the WORKDIR \/app: only the agent's work dir is kept/,
    ],
    [
      { "task.toml": 'artifacts = [{ source = "/data/dump.sql", service = "db" }]\n' },
      /^task.toml: artifacts: "\/data\/dump.sql" is collected from service "db": only the agent's work dir is kept/,
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
      "task.toml: environment.network_mode asks for the internet; the sandbox has none (only the model proxy); its verifier gets the container engine's network only on a runner started with --allow-verifier-network",
    ]);
    expect((task.metadata as { harbor: { warnings: string[] } }).harbor.warnings).toEqual(warnings);
  });
});

const FEATURES = join(ROOT, "test", "fixtures", "harbor-features");

describe("task.toml features Harbor runs (test/fixtures/harbor-features)", () => {
  it("maps [[steps]] to one session's steps: instructions, tests over the task's, workdir files, setup, gates", async () => {
    const { task } = await importHarborTask(join(FEATURES, "step-notes"), { agent });
    expect(validateTask(task).ok).toBe(true);
    const cfg = (task.evaluator as { config: Record<string, unknown> }).config;
    const steps = cfg.steps as Record<string, unknown>[];
    expect(steps.map((s) => s.name)).toEqual(["create", "append"]);
    expect(task.instruction).toBe("Create ./notes.txt whose only line is the line in ./header.txt.");
    expect(cfg.tests).toEqual({ "helpers.sh": expect.stringContaining("pass()") });
    expect(cfg.step_reward_strategy).toBe("mean");
    expect(steps[0]).toMatchObject({ min_reward: 1, agent_timeout_seconds: 120, setup: false, files: {} });
    expect(steps[1]).toMatchObject({
      setup: true,
      env: { EXPECTED_LAST: "second line" },
      timeout_seconds: 60,
      healthcheck: { command: "test -s ./notes.txt", interval_sec: 1, timeout_sec: 5, retries: 2 },
      artifacts: ["extra.txt"],
    });
    const files = steps[1]?.files as Record<string, string>;
    expect(files["extra.txt"]).toBe("second line   \n");
    // setup.sh runs in the agent's sandbox: WORKDIR is its work dir, /logs the judge's dir under HOME.
    expect(files["setup.sh"]).toContain("sed -i 's/[[:space:]]*$//' ./extra.txt");
    expect(task.artifacts).toEqual(["notes.txt"]);
    // Both steps' agent and test time: the session runs them all.
    expect(task.timeout_seconds).toBe(360);
    expect((task.runtime as { image: string }).image).toBe(
      `build:timeout=300:${join(FEATURES, "step-notes", "environment")}`,
    );
  });

  it("refuses more [[steps]] than a task may have (issue 49)", async () => {
    const steps = Array.from({ length: 33 }, (_, i) => `[[steps]]\nname = "s${i}"\n`).join("");
    const dir = await taskDir({ "task.toml": `${TASK["task.toml"]}${steps}` });
    expect(await refusal(dir)).toBe("task.toml: steps: 33 steps, more than the 32 a task may have");
  });

  it("reads skills_dir, `version` and a Dockerfile with COPY and RUN from its context", async () => {
    const { task, warnings } = await importHarborTask(join(FEATURES, "skill-stamp"), {
      agent: { harness: "pi" },
    });
    expect(validateTask(task).ok).toBe(true);
    expect(warnings.filter((w) => w.includes("skills"))).toEqual([]);
    expect((task.runtime as { prepare: string[] }).prepare).toEqual([
      `if [ -d '/opt/skills' ]; then mkdir -p "$HOME/.agents/skills" && cp -R '/opt/skills/.' "$HOME/.agents/skills/"; fi`,
    ]);
    expect((task.metadata as { harbor: { schema_version: string } }).harbor.schema_version).toBe("1.0");
  });

  it("gives environment.mcp_servers to the agent (agent.mcp_servers), refused where the harness has no MCP config", async () => {
    const dir = await taskDir({
      "task.toml": `${TASK["task.toml"]}mcp_servers = [{ name = "notes", transport = "http", url = "http://notes:8000/mcp" }, { name = "local", transport = "stdio", command = "notes-mcp", args = ["--ro"] }]\n`,
    });
    const { task } = await importHarborTask(dir, { agent: { harness: "claude_code" } });
    expect((task.agent as { mcp_servers: unknown }).mcp_servers).toEqual([
      { name: "notes", transport: "streamable-http", url: "http://notes:8000/mcp" },
      { name: "local", transport: "stdio", command: "notes-mcp", args: ["--ro"] },
    ]);
    expect(validateTask(task).ok).toBe(true);
    const shell = await importHarborTask(dir, { agent });
    const check = validateTask(shell.task);
    expect(check.ok).toBe(false);
    expect(check.ok ? "" : check.problems.join("; ")).toMatch(
      /agent.mcp_servers: harness "shell" cannot take MCP servers/,
    );
  });

  it("keeps artifacts under the WORKDIR (the short form and ArtifactConfig), warning on what is not applied", async () => {
    const dir = await taskDir({
      "task.toml": `artifacts = ["/app/out/", { source = "/app/report.json", destination = "r.json" }, "logs/run.log"]\n`,
    });
    const { task, warnings } = await importHarborTask(dir, { agent });
    expect(task.artifacts).toEqual(["out", "report.json", "logs/run.log"]);
    expect(warnings).toContain(
      'task.toml: artifacts: "/app/report.json": kept under its work-dir path, not at destination "r.json"',
    );
  });

  it("imports the collection beside a job's config.yaml and metrics/ (dry run, exit 0)", () => {
    const res = spawnSync(process.execPath, ["bin/polar.js", "import-harbor", "--dry-run", FEATURES], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(res.stdout).toContain("2 of 2 tasks import");
    expect(res.status, res.stderr).toBe(0);
  });

  const harbor = harborPython();
  it.skipIf(harbor.problem !== null)("are tasks Harbor itself loads (its Task model, steps included)", () => {
    if (harbor.problem !== null) return;
    const code = [
      "import sys",
      "from pathlib import Path",
      "from harbor.models.task.task import Task",
      "for d in sys.argv[1:]:",
      "    t = Task(Path(d))",
      "    print(Path(d).name, len(t.config.steps or []), t.config.environment.skills_dir, len(t.config.artifacts))",
    ].join("\n");
    const res = spawnSync(
      harbor.python,
      ["-c", code, join(FEATURES, "skill-stamp"), join(FEATURES, "step-notes")],
      { encoding: "utf8" },
    );
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.trim().split("\n")).toEqual(["skill-stamp 0 /opt/skills 0", "step-notes 2 None 1"]);
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
      const { task, warnings } = await importHarborTask(dir, { agent, noBuild: true });
      expect(validateTask(task).ok).toBe(true);
      expect(warnings).toEqual([
        "task.toml: environment.network_mode asks for the internet; the sandbox has none (only the model proxy); its verifier gets the container engine's network only on a runner started with --allow-verifier-network",
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
      // Its Dockerfile needs no build, so it runs in the runner's bwrap with --no-build.
      const { task } = await importHarborTask(dir, { agent: mini, numSamples: 1, noBuild: true });
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
      bases: ["x"],
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
    const bad = await taskDir({ "tests/Dockerfile": "FROM x\n" });
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
    expect(res.stderr).toContain(`${bad}: refused: tests/Dockerfile: a separate verifier image is not built`);
    expect(res.stderr).toContain("1 of 2 tasks converted");
  });

  it("--dry-run over a collection: imported / refused by reason, the others still imported, exit 1 naming the bad", async () => {
    const collection = join(root, "collection");
    for (const [name, change] of [
      ["good-a", {}],
      ["good-b", { "config.yaml": "x: 1\n" }],
      ["bad-verifier", { "tests/Dockerfile": "FROM x\n" }],
      ["bad-steps", { steps: null, "steps/one/instruction.md": "x\n" }],
    ] as const) {
      const dir = await taskDir(change);
      await cp(dir, join(collection, name), { recursive: true });
    }
    await writeFile(join(collection, "registry.json"), "[]\n");
    const res = spawnSync(process.execPath, ["bin/polar.js", "import-harbor", "--dry-run", collection], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(res.status).toBe(1);
    expect(res.stdout).toContain(`imported  ${join(collection, "good-a")}`);
    expect(res.stdout).toContain(`imported  ${join(collection, "good-b")}`);
    expect(res.stdout).toMatch(
      /refused {3}1 {2}tests\/Dockerfile: a separate verifier image .*\n {10}bad-verifier\n/,
    );
    expect(res.stdout).toMatch(
      /refused {3}1 {2}steps: task.toml declares no \[\[steps\]\].*\n {10}bad-steps\n/,
    );
    expect(res.stdout).toContain("2 of 4 tasks import");
    expect(res.stderr).toContain(`${join(collection, "bad-verifier")}: refused:`);
    expect(res.stderr).toContain(`${join(collection, "bad-steps")}: refused:`);
  });
});

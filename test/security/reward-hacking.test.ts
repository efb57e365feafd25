import { spawn, spawnSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { SessionResult } from "../../shared/schemas/trajectory.ts";
import { genericTricks, pytestCases, REWARD_CASES, type Trick } from "./reward-hacking-cases.ts";

/*
 * Issue 34: rewards the policy cannot game. Every case of reward-hacking-cases.ts runs as tasks of one
 * `polar run` (the default runtime, bwrap; sessions in parallel): a control (an honest wrong answer),
 * a solved run, and each trick (the wrong answer plus the trick). A trick must score exactly what its
 * control scores. Before the fix (evaluators of f98bc28), 8 tricks were paid 1: swe_patch's
 * shadow-test-file, shadow-test-in-source, and (plain runner) fake-pass-on-stderr and
 * fake-pass-then-crash and huge-output; test_on_output's python-user-site, module-shadowing-json-py and
 * symlink-to-judge-file.
 *
 * Issue 41 added the judges' own tools (a venv with pytest 9, a Makefile, package.json scripts) and
 * a harbor entry. Before that fix (evaluators of 6f611a2), 19 tricks were paid 1: tto-pytest's
 * conftest-py, pytest-ini-collect-only, the five *-plugin tricks, init-py-beside-hidden-test,
 * pth-in-prepared-venv and module-in-prepared-venv-shadows-pytest; swe-pytest's five *-plugin tricks (conftest.py held);
 * tto-make's rewritten-makefile and gnumakefile-beside; tto-scripts' rewritten-package-scripts;
 * harbor's agent-program-writes-reward-json.
 *
 * The pytest the judges run is the project's own (pytest 9 in .venv, scripts/test-python.sh): its
 * packages are copied into the run's harness cache, which every sandbox sees read-only, and each
 * pytest task's prepare step builds a venv of the sandbox's python3 that sees them.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const problem = bwrapProblem();
if (problem)
  console.warn(`reward-hacking: ${problem}; polar run would fall back to process, so this is skipped`);

/** The project venv's pytest 9 and the packages it imports, or why it is missing. */
function pytestPackages(): { dir: string; names: string[] } | { problem: string } {
  const res = spawnSync(
    join(ROOT, ".venv/bin/python"),
    [
      "-c",
      "import os, pytest; print(pytest.__version__); print(os.path.dirname(os.path.dirname(pytest.__file__)))",
    ],
    { encoding: "utf8" },
  );
  const [version, dir] = res.stdout.trim().split("\n");
  if (res.status !== 0 || !version?.startsWith("9."))
    return { problem: `no pytest 9 in .venv (${version ?? res.stderr.trim()})` };
  return { dir, names: ["pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py"] };
}
const pytest = pytestPackages();
if ("problem" in pytest) {
  if (process.env.CI === "true") throw new Error(`reward-hacking: ${pytest.problem}`);
  console.warn(`reward-hacking: ${pytest.problem}; its pytest cases are left out`);
}
const CACHE = join(tmpdir(), `polar-reward-hacking-cache-${process.pid}`);
const PYTEST_SITE = join(CACHE, "pytest-site");
/** POLAR_REWARD_CASES=id,id runs only those cases (while working on one evaluator). */
const only = process.env.POLAR_REWARD_CASES?.split(",");
const CASES = [...REWARD_CASES, ...("problem" in pytest ? [] : pytestCases(PYTEST_SITE))].filter(
  (c) => !only || only.includes(c.id),
);

let dir: string;
let output = "";
let wallMs = 0;
const results = new Map<string, SessionResult>();
const rows: { caseId: string; trick: Trick }[] = [];

beforeAll(async () => {
  if (problem) return;
  dir = await mkdtemp(join(tmpdir(), "polar-reward-hacking-"));
  await mkdir(PYTEST_SITE, { recursive: true });
  if (!("problem" in pytest)) {
    const wanted = new Set(pytest.names);
    for (const name of await readdir(pytest.dir)) {
      const base = name.replace(/-[^-]+\.dist-info$/, "");
      if (wanted.has(name) || (name.endsWith(".dist-info") && wanted.has(base)))
        await cp(join(pytest.dir, name), join(PYTEST_SITE, name), { recursive: true });
    }
  }
  const store = join(dir, "out", "store");
  const tasks: unknown[] = [];
  for (const c of CASES) {
    const tricks = [...(c.generic === false ? [] : genericTricks(c, store)), ...c.tricks];
    const runs: [string, string][] = [
      ["control", c.wrong],
      ["right", c.right],
      ...tricks.map((t): [string, string] => [t.name, `${c.wrong}\n${t.steps}`]),
    ];
    for (const t of tricks) rows.push({ caseId: c.id, trick: t });
    for (const [name, steps] of runs) {
      tasks.push({
        task_id: `${c.id}-${name}`,
        instruction: "(the agent's commands are the shell command)",
        timeout_seconds: 60,
        agent: { harness: "shell", settings: { command: `${steps}\necho END` } },
        runtime: { prepare: c.prepare },
        evaluator: c.evaluator,
      });
    }
  }
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
  const started = Date.now();
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, "bin", "polar.js"),
        "run",
        tasksFile,
        "--out",
        join(dir, "out"),
        "--run",
        "6",
        "--postrun",
        "6",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, POLAR_SESSIONS_DIR: join(dir, "sessions"), POLAR_HARNESS_CACHE: CACHE },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    child.on("error", fail);
    child.on("close", done);
  });
  wallMs = Date.now() - started;
  console.log(`reward-hacking: ${tasks.length} sessions in one polar run, ${(wallMs / 1000).toFixed(1)} s`);
  // 1 = some session ended ERROR: each test below says which and why.
  if (code !== 0 && code !== 1) throw new Error(`polar run exited ${code}:\n${output.slice(-4000)}`);
  const ds = new DirectoryStore(store);
  for (const key of await ds.list("results/")) {
    const bytes = (await ds.get(key)) as Uint8Array;
    const r = SessionResult.parse(JSON.parse(new TextDecoder().decode(bytes)));
    results.set(r.task_id, r);
  }
}, 600_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  await rm(CACHE, { recursive: true, force: true });
});

function result(taskId: string): SessionResult {
  const r = results.get(taskId);
  if (!r) throw new Error(`no result for ${taskId} (results/${taskId}/ in ${keys.resultsOfTask(taskId)})`);
  return r;
}

/** What a reviewer needs when a trick pays: the evaluator's own account. */
function account(r: SessionResult): string {
  const { status, error, timings, agent, evaluation } = r;
  return JSON.stringify({ status, error, timings, agent, evaluation }).slice(0, 3000);
}

describe.skipIf(problem !== null)("rewards a policy cannot game", () => {
  it.each(CASES.map((c) => [c.id, c.controlReward ?? 0]))(
    "%s: the control scores %s and the solved task 1",
    (id, want) => {
      const control = result(`${id}-control`);
      expect(control.status, account(control)).toBe("COMPLETED");
      expect(control.reward, account(control)).toBe(want);
      const right = result(`${id}-right`);
      expect(right.reward, account(right)).toBe(1);
    },
  );

  it.each(
    // Built before the run (the table is static), so every trick is its own test line.
    CASES.flatMap((c) =>
      [...(c.generic === false ? [] : genericTricks(c, "")), ...c.tricks].map((t) => [c.id, t.name]),
    ),
  )("%s: %s scores what its control scores", (caseId, trick) => {
    const control = result(`${caseId}-control`);
    const r = result(`${caseId}-${trick}`);
    expect(r.status, account(r)).toBe(control.status);
    expect(r.reward, account(r)).toBe(control.reward);
  });

  it("ran every trick of the table", () => {
    expect(rows.length).toBeGreaterThan(0);
    for (const { caseId, trick } of rows) expect(results.has(`${caseId}-${trick.name}`)).toBe(true);
  });
});

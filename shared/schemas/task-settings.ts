import { z } from "zod";
import { TaskEnv } from "./reserved-env.ts";
import type { HARNESSES } from "./task.ts";

/**
 * The schemas of the free-form parts of a TaskRequest: `agent.settings` per harness and
 * `evaluator.config` per built-in evaluator. They live here (zod only, no Node) so the same check
 * runs at submit time in the CLI, in the control API (Node or Worker) and again at run time in the
 * presets and evaluators. Every object is strict: a misspelt key is an error, never ignored.
 */

/** `agent.settings` keys every npm-installed CLI preset understands. */
export const CliSettings = z.strictObject({
  /** Appended to the preset's argv, before the instruction where the CLI takes it last. */
  extra_args: z.array(z.string()).default([]),
  /** Retries the CLI makes on a failed model call (5xx, dropped stream). */
  max_retries: z.number().int().min(0).max(10).default(2),
  /** Deep-merged over the config file the preset writes (settings.json, config.toml, ...). */
  config: z.record(z.string(), z.unknown()).default({}),
});
export type CliSettings = z.infer<typeof CliSettings>;

export const OpencodeSettings = CliSettings.extend({
  /**
   * Session title. Given, OpenCode skips the extra model call that invents one (a call that is
   * not part of the episode); null restores that call.
   */
  title: z.string().min(1).nullable().default("polar"),
});
export type OpencodeSettings = z.infer<typeof OpencodeSettings>;

/** The `browser_use` harness: a computer-use agent in a headless Chromium (docs/computer-use.md). */
export const BrowserUseSettings = CliSettings.extend({
  /**
   * The task's web app: a shell command the driver starts in the work dir, inside the session's
   * sandbox, before the browser opens, and stops when the agent ends (`{{polar_root}}` and
   * `{{work_dir}}` are filled in as for the shell harness).
   */
  serve: z.string().regex(/\S/, "serve: a command line").optional(),
  /** The page the browser opens first; with `serve`, waited on until it answers. */
  start_url: z.url({ protocol: /^https?$/, error: "start_url: an http:// or https:// URL" }).optional(),
  /** How long the driver waits for `start_url` to answer before it gives up. */
  app_ready_seconds: z.number().positive().max(600).default(30),
});
export type BrowserUseSettings = z.infer<typeof BrowserUseSettings>;

/** The `shell` harness: a team's own agent as a command line (placeholders: see docs/tasks.md). */
export const ShellSettings = z.strictObject({
  command: z
    .string()
    .regex(
      /\S/,
      'the shell harness needs a command line, e.g. "node {{polar_root}}/examples/agents/mini-agent.mjs {{instruction}}"',
    ),
});
export type ShellSettings = z.infer<typeof ShellSettings>;

/** `agent.harness` -> the schema of its `agent.settings`. One line per harness. */
export const HARNESS_SETTINGS = {
  claude_code: CliSettings,
  codex: CliSettings,
  gemini_cli: CliSettings,
  qwen_code: CliSettings,
  opencode: OpencodeSettings,
  pi: CliSettings,
  mini_swe_agent: CliSettings,
  hermes: CliSettings,
  openhands_sdk: CliSettings,
  openclaw: CliSettings,
  cline: CliSettings,
  browser_use: BrowserUseSettings,
  shell: ShellSettings,
} as const satisfies Record<(typeof HARNESSES)[number], z.ZodType>;

const FileSource = z.union([
  z.string(),
  z.strictObject({ content: z.string() }),
  z.strictObject({ from: z.string().min(1) }),
]);
/**
 * Files only the evaluator may see (hidden tests, expected outputs), copied in after the harness:
 *   "files": { "tests/test_hidden.mjs": "...inline text...", "expected.json": { "from": "/data/exp.json" } }
 * A `from` path is read on the runner's host: only under the operator's `--files-dir` dirs.
 */
export const EvaluatorFiles = z
  .record(z.string().min(1), FileSource)
  .superRefine((files, ctx) => {
    for (const path of Object.keys(files)) {
      // Files land inside the work dir: a ".." path could overwrite the runner's own files.
      if (path.split(/[\\/]/).includes("..")) {
        ctx.addIssue({ code: "custom", path: [path], message: "a file path must not contain '..'" });
      }
    }
  })
  .default({});
export type EvaluatorFiles = z.infer<typeof EvaluatorFiles>;

/** `session_completed` takes no configuration. */
export const SessionCompletedConfig = z.strictObject({});

/**
 * Files that test runners, package managers and interpreters read on their own from the tree they
 * run in, so whoever writes them decides what the judge's test command does: pytest 9's config files
 * (it takes the first of pytest.toml, .pytest.toml, pytest.ini, .pytest.ini, pyproject.toml,
 * tox.ini, setup.cfg upwards from its args; `addopts` there can add `-p plugin` or `--collect-only`,
 * `pythonpath` makes any module a plugin) and conftest.py; what Python runs at startup (`.pth`,
 * sitecustomize, stale bytecode) and the metadata its plugin entry points come from; package
 * scripts, the commands they find first on PATH (`node_modules/.bin`) and npm's own config
 * (`npm test`, `node --run`); the config of jest, vitest, mocha and
 * babel; Makefiles (make reads GNUmakefile before makefile before Makefile); cargo's `.cargo/`
 * (a `runner` wraps every test binary). swe_patch drops them from the patch, test_on_output and
 * harbor never copy them from the outputs (`outputs_denied`).
 */
export const RUNNER_CONFIG_FILES = [
  "**/conftest.py",
  "**/pytest.toml",
  "**/.pytest.toml",
  "**/pytest.ini",
  "**/.pytest.ini",
  "**/pyproject.toml",
  "**/tox.ini",
  "**/setup.cfg",
  "**/*.pth",
  "**/sitecustomize.py",
  "**/usercustomize.py",
  "**/__pycache__/**",
  "**/*.pyc",
  "**/*.dist-info/**",
  "**/*.egg-info/**",
  "**/package.json",
  "**/node_modules/.bin/**",
  "**/.npmrc",
  "**/.yarnrc",
  "**/.yarnrc.yml",
  "**/.pnpmfile.cjs",
  "**/node.config.json",
  "**/.mocharc*",
  "**/jest.config.*",
  "**/vitest.config.*",
  "**/vitest.workspace.*",
  "**/vite.config.*",
  "**/babel.config.*",
  "**/.babelrc*",
  "**/GNUmakefile",
  "**/makefile",
  "**/Makefile",
  "**/.cargo/**",
] as const;

/**
 * What of the agent's work dir the judge gets (paths relative to it): regular files and dirs only,
 * copied into a fresh runtime; symlinks are left behind. Narrow it to the files the task asks for.
 */
const AgentOutputs = z
  .array(
    z
      .string()
      .min(1)
      .refine((p) => !p.startsWith("/") && !p.split(/[\\/]/).includes(".."), {
        message: "an output path is relative to the work dir and must not contain '..'",
      }),
  )
  .default(["."]);

/**
 * What of the declared `outputs` never reaches the judge (agent-outputs.ts): its tools and their
 * config come from the task, not from the agent.
 */
const OutputRules = {
  /**
   * Globs (relative to the work dir, git pathspec glob syntax) of output files never copied to the
   * judge: test-runner config, package scripts and Python startup files by default. `[]` copies them.
   */
  outputs_denied: z.array(z.string().min(1)).default([...RUNNER_CONFIG_FILES]),
  /**
   * Globs of output files that may replace, or be added inside, what the judge's prepare steps built
   * (whatever its work dir already holds). A declared output path the prepare steps built counts as
   * listed, with everything under it; the work dir itself (`.`) does not.
   */
  outputs_replace: z.array(z.string().min(1)).default([]),
};

/** Process rewards an evaluator can add (docs/evaluation-and-sft.md, "Process rewards"). */
export const STEP_REWARD_SOURCES = ["none", "tool_results"] as const;

/** `test_on_output`: a command run after the harness, scored by exit code or stdout. */
export const TestOnOutputConfig = z.strictObject({
  command: z.string().min(1),
  files: EvaluatorFiles,
  outputs: AgentOutputs,
  ...OutputRules,
  /**
   * Run `command` in the agent's own runtime (its work dir, HOME and tools) instead of a fresh one.
   * Only for checks that must see the agent's environment: the agent can then change how the check
   * behaves (docs/security.md, "Reward integrity").
   */
  trust_agent_runtime: z.boolean().default(false),
  env: TaskEnv.default({}),
  timeout_seconds: z.number().positive().optional(),
  /** Exit-code mode (used when no expected output is given). */
  expected_exit_code: z.number().int().default(0),
  expected_lines: z.array(z.string()).optional(),
  expected_json: z.unknown().optional(),
  /** With expected_lines: reward = fraction of lines found instead of all-or-nothing. */
  partial_credit: z.boolean().default(false),
  /** `tool_results`: each turn that called tools gets step reward 1 when every result came back without an error, else 0. */
  step_rewards: z.enum(STEP_REWARD_SOURCES).default("none"),
});
export type TestOnOutputConfig = z.infer<typeof TestOnOutputConfig>;

/** An absolute POSIX path of the task's image (`/app`), never `/` itself. */
const ImagePath = z
  .string()
  .regex(/^\/[^\0]*[^/]$/, { message: "an absolute path other than / (no trailing slash)" });

/**
 * The most steps a multi-step task may have: each runs the harness and a judge runtime, and keeps
 * its artifacts (issue 49). An operator can lower it (`--max-task-limits steps=N`).
 */
export const MAX_HARBOR_STEPS = 32;

/** One step of a multi-step Harbor task (harbor/models/task/config.py, `StepConfig`). */
export const HarborStep = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { message: "a step name is a plain directory name" }),
  instruction: z.string().regex(/\S/, { message: "a step needs an instruction" }),
  /** The step's own `tests/`, laid over the task's (a step's test.sh wins over the task's). */
  tests: EvaluatorFiles.default({}),
  /** Files put into the work dir before the step's agent runs (Harbor's `steps/<name>/workdir/`). */
  files: z
    .record(
      z
        .string()
        .min(1)
        .refine((p) => !p.startsWith("/") && !p.split("/").includes(".."), {
          message: "a step file's path is relative to the work dir and must not contain '..'",
        }),
      z.string(),
    )
    .default({}),
  /** Run `bash setup.sh` in the work dir after `files` land (Harbor runs a `workdir/setup.sh`). */
  setup: z.boolean().default(false),
  /** The step's agent budget; the session's `timeout_seconds` still bounds all steps together. */
  agent_timeout_seconds: z.number().positive().optional(),
  timeout_seconds: z.number().positive().optional(),
  env: TaskEnv.default({}),
  /** Below this (on `reward`, or on each named key of reward.json) the remaining steps do not run. */
  min_reward: z.union([z.number(), z.record(z.string(), z.number())]).optional(),
  /** Run before the step's agent; failing `retries` times in a row ends the steps there. */
  healthcheck: z
    .strictObject({
      command: z.string().min(1),
      interval_sec: z.number().nonnegative().default(5),
      timeout_sec: z.number().positive().default(30),
      retries: z.number().int().positive().default(3),
    })
    .optional(),
  /** Work-dir paths kept after this step, besides the task's `artifacts`. */
  artifacts: z.array(z.string().min(1)).default([]),
});
export type HarborStep = z.infer<typeof HarborStep>;

/**
 * `harbor`: a Harbor task's `tests/` run after the harness (Terminal-Bench 2.0 layout; `polar
 * import-harbor` writes this config). Reward from the `reward.json` or `reward.txt` that
 * `tests/test.sh` writes under `/logs/verifier`.
 */
export const HarborConfig = z
  .strictObject({
    /** The task's `tests/` dir, path (relative to it) -> file; `test.sh` is required (in it, or in every step's). */
    tests: EvaluatorFiles,
    /** The task image's WORKDIR: in the tests it becomes the judge's work dir. */
    workdir: ImagePath.default("/app"),
    outputs: AgentOutputs,
    ...OutputRules,
    env: TaskEnv.default({}),
    timeout_seconds: z.number().positive().optional(),
    /** reward.json key that is the reward (Harbor's own metrics read `reward`); a lone key is used whatever its name. */
    reward_key: z.string().min(1).default("reward"),
    /**
     * A multi-step task (Harbor's `[[steps]]`): one session runs the harness once per step, in order,
     * each step's tests judged after it (harbor-steps.ts); the task's `instruction` is the first step's.
     */
    steps: z.array(HarborStep).min(1).max(MAX_HARBOR_STEPS).optional(),
    /** The task's reward from its steps' (Harbor's `multi_step_reward_strategy`): their mean per key, or the last step's. */
    step_reward_strategy: z.enum(["mean", "final"]).default("mean"),
  })
  .superRefine((cfg, ctx) => {
    const has = (tests: Record<string, unknown>) => Object.hasOwn(tests, "test.sh");
    if (has(cfg.tests)) return;
    if (!cfg.steps) ctx.addIssue({ code: "custom", path: ["tests"], message: 'must hold "test.sh"' });
    for (const [i, step] of (cfg.steps ?? []).entries())
      if (!has(step.tests))
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, "tests"],
          message: 'must hold "test.sh" (the task\'s tests hold none)',
        });
  });
export type HarborConfig = z.infer<typeof HarborConfig>;

/**
 * What swe_patch drops from the agent's diff by default: files test runners collect on their own
 * (node --test, pytest, jest, vitest, mocha, go test, cargo), where a patch could add a test that
 * reports the hidden test's name as passing, and every runner config above.
 */
export const DEFAULT_TEST_FILES = [
  "**/*.test.*",
  "**/*.spec.*",
  "**/*_test.*",
  "**/*-test.*",
  "**/test_*.py",
  "**/test-*.*",
  "**/test.js",
  "**/test.mjs",
  "**/test.cjs",
  "**/test/**",
  "**/tests/**",
  "**/__tests__/**",
  ...RUNNER_CONFIG_FILES,
] as const;

/** `swe_patch`: the agent's diff applied in a fresh runtime, then the tests (see swe-patch.ts). */
export const SwePatchConfig = z.strictObject({
  /** Run with sh -c in `repo_dir`. With `{{test}}` it runs once per test (exit 0 = pass); else once, log parsed. */
  test_command: z.string().min(1),
  fail_to_pass: z.array(z.string().min(1)).min(1),
  pass_to_pass: z.array(z.string().min(1)).default([]),
  /** Pathspecs left out of the agent's diff (git `:(exclude)` syntax, relative to repo_dir). */
  exclude_paths: z.array(z.string().min(1)).default([]),
  /** Copied into the fresh runtime after the patch is applied. */
  files: EvaluatorFiles,
  /** Git repository, relative to the work dir. */
  repo_dir: z.string().default("."),
  /** What the agent started from. */
  base_ref: z.string().min(1).default("HEAD"),
  /** Regex with named groups `status` and `test` when the log is in none of the built-in formats. */
  result_pattern: z.string().optional(),
  /** Extra `status` values that mean a pass (besides ok, passed, pass, xfail, success). */
  pass_statuses: z.array(z.string().min(1)).default([]),
  /**
   * A machine report the test command writes to `{{report}}` (a path outside the repo the patch
   * cannot write to): results are read from it, never from the log.
   */
  report: z.enum(["junit", "tap"]).optional(),
  /** Exit codes of `test_command` (the single run) that still let the tests count. */
  ok_exit_codes: z.array(z.number().int()).min(1).default([0]),
  /**
   * Globs (git pathspec glob syntax, relative to repo_dir) of test files and test-runner config that
   * the agent's diff may not touch: changes there are dropped from the patch and listed in
   * `dropped_test_files`. `[]` keeps every change.
   */
  test_files: z.array(z.string().min(1)).default([...DEFAULT_TEST_FILES]),
  env: TaskEnv.default({}),
  timeout_seconds: z.number().positive().optional(),
});
export type SwePatchConfig = z.infer<typeof SwePatchConfig>;

/** Built-in `evaluator.strategy` -> the schema of its `evaluator.config`. One line per evaluator. */
export const EVALUATOR_CONFIGS = {
  session_completed: SessionCompletedConfig,
  test_on_output: TestOnOutputConfig,
  swe_patch: SwePatchConfig,
  harbor: HarborConfig,
} as const satisfies Record<string, z.ZodType>;
export type BuiltInEvaluator = keyof typeof EVALUATOR_CONFIGS;

/** A strategy that names a module rather than a built-in (has a path separator or a JS/TS extension). */
export function looksLikeModulePath(strategy: string): boolean {
  return /[/\\]|\.(m?js|cjs|ts|mts)$/.test(strategy);
}

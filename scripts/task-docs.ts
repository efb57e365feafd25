// Writes (or with --check, verifies) the generated parts of the task-file reference: the field
// tables in docs/tasks.md and docs/task-request.schema.json (for editors). Types, defaults and
// required-ness come from the zod schemas; descriptions and examples from FIELDS below, which
// must name every schema field and nothing else, so the reference cannot drift from the code.
//
//   node scripts/task-docs.ts           rewrite both files (then `npx biome check --write docs/`)
//   node scripts/task-docs.ts --check   exit 1 and say what differs (test/unit/task-docs.test.ts)
import { readFile, writeFile } from "node:fs/promises";
import { z } from "zod";
import { RUNNER_DEFAULTS } from "../batch-runner/runner-defaults.ts";
import { TaskRequest } from "../shared/schemas/task.ts";
import {
  BrowserUseSettings,
  CliSettings,
  EVALUATOR_CONFIGS,
  HARNESS_SETTINGS,
  HarborConfig,
  OpencodeSettings,
  ShellSettings,
  SwePatchConfig,
  TestOnOutputConfig,
} from "../shared/schemas/task-settings.ts";
import { type SchemaField, schemaFields } from "./task-fields.ts";

type Doc = [description: string, example: string];

/** The tables of docs/tasks.md: marker name -> schema and, per field path, [description, example]. */
export const TABLES: Record<string, { schema: z.ZodType; fields: Record<string, Doc> }> = {
  TaskRequest: {
    schema: TaskRequest,
    fields: {
      task_id: [
        "Names the task; sessions are `{task_id}-{sample_index}`. Letters, digits, `_ . -`, up to 128, no `..`.",
        '`"fix-add-17"`',
      ],
      instruction: [
        "The prompt the harness gets (the `shell` harness: `{{instruction}}`). May not start with `-` (harness CLIs take it as an argument and would read it as a flag).",
        '`"Make the tests pass."`',
      ],
      num_samples: ["Sessions to run for this task (the GRPO group size), 1..10000.", "`8`"],
      timeout_seconds: ["The harness's budget per session; past it the session is TIMEOUT.", "`600`"],
      "agent.harness": ["Which harness preset runs the session (docs/harnesses.md).", '`"claude_code"`'],
      "agent.model": [
        "Model name the harness is told to use; the proxy forwards it upstream.",
        '`"Qwen/Qwen3-8B"`',
      ],
      "agent.env": [
        "Extra environment for the harness; overrides the preset's variables.",
        '`{"DEBUG": "1"}`',
      ],
      "agent.sampling.temperature": [
        'Sampling temperature the proxy sets on every call of the session, whatever the harness sends (docs/proxy.md "Sampling").',
        "`1.0`",
      ],
      "agent.sampling.top_p": ["Nucleus sampling, set on every call (0 < p <= 1).", "`0.95`"],
      "agent.sampling.top_k": ["Top-k, set on every call (-1: none).", "`20`"],
      "agent.sampling.min_p": ["Min-p, set on every call.", "`0`"],
      "agent.sampling.seed": ["Sampling seed, set on every call.", "`1234`"],
      "agent.sampling.max_tokens": [
        "A cap on tokens per call: the harness's own `max_tokens` applies when lower.",
        "`4096`",
      ],
      "agent.sampling.cache_salt": [
        "vLLM's prefix-cache salt, set on every call: cached KV blocks of another salt (older weights) never serve the session.",
        '`"step-12"`',
      ],
      "agent.token_in_token_out": [
        "Token-in-token-out: the proxy builds each prompt from the session's captured ids, so the model sees exactly what it sampled and the session stays one trace (docs/tito.md).",
        "`true`",
      ],
      "agent.proxy_limits.max_in_flight": [
        `Calls of one session the proxy runs at once (model calls, token counts, model listings); more are answered 429 with \`retry-after\` in the harness's provider shape. Default: the runner's (${RUNNER_DEFAULTS.proxyMaxInFlight}) (docs/security.md "Fair share at the proxy").`,
        "`4`",
      ],
      "agent.proxy_limits.tokens_per_minute": [
        `Prompt plus completion tokens (the engine's usage) one session may use per minute (a token count costs the tokens counted, a failed call at least its request's size at 4 bytes a token); past it, 429 with the wait. Default: the runner's (${RUNNER_DEFAULTS.proxyTokensPerMinute.toLocaleString("en-US")}).`,
        "`1000000`",
      ],
      "agent.mcp_servers": [
        'MCP servers the harness starts for the agent, written into its own MCP config; Harbor\'s `mcp_servers` fields (`name`, `transport` "stdio" | "sse" (default) | "streamable-http", `url`, `command`, `args`, `headers`) plus `env` for stdio. Presets without an MCP config refuse it ([harnesses.md](harnesses.md#mcp-servers)).',
        '`[{"name": "files", "transport": "stdio", "command": "node", "args": ["server.mjs"]}]`',
      ],
      "agent.settings": [
        "The preset's own settings, checked against its schema ([Harness settings](#harness-settings)).",
        '`{"command": "..."}`',
      ],
      "runtime.backend": [
        "Where the session runs: a host process, a bwrap sandbox, Apptainer or Docker (docs/runner.md).",
        '`"bwrap"`',
      ],
      "runtime.image": [
        "Container/SIF image, or a root directory for bwrap; ignored by `process`.",
        '`"python:3.12"`',
      ],
      "runtime.prepare": [
        "Shell commands run in the work dir during INIT, before the harness starts.",
        '`["git clone ... ."]`',
      ],
      "runtime.env": [
        "Environment for the runtime (prepare steps, harness, evaluator).",
        '`{"PIP_INDEX_URL": "..."}`',
      ],
      "runtime.limits.cpus": [
        "CPUs: a cgroup CPU quota (bwrap, process), `--cpus` (containers). For every limit: a runtime that cannot enforce one the task sets refuses the session at INIT (ERROR naming it); a hit ends the session ERROR `limit:<name>` (docs/security.md, Resource limits).",
        "`2`",
      ],
      "runtime.limits.memory_mb": [
        "Memory of the whole session in MiB: a cgroup (bwrap, process), `--memory` (containers). Unset: the runner's default, 80% of RAM / run slots (at least 1 GiB). Hit (an OOM kill): `limit:memory`.",
        "`4096`",
      ],
      "runtime.limits.gpus": [
        "GPUs to expose (docker, apptainer; bwrap and process refuse more than 0). More than the node has (`/dev/nvidia<N>`, or `POLAR_NODE_GPUS`) is refused at INIT.",
        "`0`",
      ],
      "runtime.limits.pids": [
        "Processes and threads of the session at once: cgroup pids, `--pids-limit`. Unset: the runner's default (at most 4096). Hit (a fork refused): `limit:pids`.",
        "`512`",
      ],
      "runtime.limits.disk_mb": [
        "Work dir and home together in MiB: an ext4 volume of this size per session, inodes in proportion (needs a root runner; `process` refuses it). Unset: `polar runner`'s default. Hit (full): `limit:disk`.",
        "`2048`",
      ],
      "runtime.limits.output_mb": [
        "What the harness prints on stdout and stderr together, in MiB, counted by the runner. Unset: the runner's default (1024). Hit: `limit:output`.",
        "`64`",
      ],
      "runtime.services": [
        'Side services (docker backend only): containers started beside the agent\'s before the harness, on one loopback only they share, reached by `name`; each `{name, image, entrypoint?, command?, env, workdir?, user?, healthcheck?, depends_on, limits}`, healthy before the agent starts (else ERROR at INIT); an `env` value `{"from_env": "NAME", "default"?}` is taken from the runner\'s environment only on a runner started with `--service-env NAME` (else ERROR at INIT naming it, or the default); `polar import-harbor` writes them from `environment/docker-compose.yaml` (docs/runner.md, "Side services").',
        '`[{"name": "kv", "image": "build:/srv/tasks/t/environment/kv"}]`',
      ],
      "runtime.judge_services": [
        "With side services, whether an evaluator's fresh runtime joins the agent's, as the agent left them (`shared`, Harbor's default), or starts its own (`separate`).",
        '`"separate"`',
      ],
      "runtime.judge_network": [
        "The judge asks for a network (Harbor's verifier phase): its fresh runtime gets the engine's network only on a runner with `--allow-verifier-network`; the agent never has one.",
        "`true`",
      ],
      "builder.strategy": ["How captures become traces (docs/reconstruction.md).", '`"per_request"`'],
      "builder.config": [
        "Builder settings, e.g. `end_of_turn_ids` for prefix_merging.",
        '`{"end_of_turn_ids": [151645]}`',
      ],
      "evaluator.strategy": [
        "A built-in evaluator (`session_completed`, `test_on_output`, `swe_patch`, `harbor`) or a module path.",
        '`"test_on_output"`',
      ],
      "evaluator.config": [
        "The evaluator's settings, checked against its schema ([Evaluator configs](#evaluator-configs)).",
        '`{"command": "npm test"}`',
      ],
      artifacts: [
        "Work-dir paths (files or dirs) kept with the session's outputs after the run, as `artifacts/{task}/{session}/{attempt}/workdir/{path}` (a Harbor task's `artifacts`; a multi-step task also keeps them after each step under `steps/{name}/workdir/`).",
        '`["report.json", "logs"]`',
      ],
      callback_url: [
        "Gets a POST with the completion notice when the task's last session is terminal.",
        '`"https://trainer/hook"`',
      ],
      metadata: [
        "Free-form; stored with the task (`tasks/{task_id}.json`) for your own bookkeeping.",
        '`{"dataset": "swe-lite"}`',
      ],
    },
  },
  "evaluator.test_on_output": {
    schema: TestOnOutputConfig,
    fields: {
      command: [
        "Run with `sh -c` after the harness, in the work dir of a fresh runtime holding `outputs` and `files`.",
        '`"node test.mjs"`',
      ],
      files: [
        'Files only the evaluator sees, copied in after `outputs` (they win): inline text or `{from: "/abs/path"}`.',
        '`{"test.mjs": "..."}`',
      ],
      outputs: [
        "What of the agent's work dir the judge gets (regular files and dirs; symlinks left behind).",
        '`["answer.txt"]`',
      ],
      outputs_denied: [
        "Globs of output files never copied to the judge: test-runner config, package scripts, Python startup files (docs/evaluation-and-sft.md). `[]` copies them.",
        '`["**/conftest.py"]`',
      ],
      outputs_replace: [
        "Globs of output files that may replace, or be added into, what the judge's prepare steps built; a declared output path may by itself.",
        '`["src/**"]`',
      ],
      trust_agent_runtime: [
        "Run `command` in the agent's own runtime: the agent can then sway the check (docs/security.md).",
        "`true`",
      ],
      env: ["Environment for `command`.", '`{"CI": "1"}`'],
      timeout_seconds: ["Budget for `command` (default: the session's, at most 600 s).", "`120`"],
      expected_exit_code: [
        "Exit-code mode (no expected output given): reward 1 when `command` exits with this.",
        "`0`",
      ],
      expected_lines: [
        "Reward 1 when every line appears in stdout (fraction with `partial_credit`).",
        '`["ok 1", "ok 2"]`',
      ],
      expected_json: ["Reward 1 when stdout parses as JSON equal to this.", '`{"answer": 42}`'],
      partial_credit: ["With `expected_lines`: reward = fraction of lines found.", "`true`"],
      step_rewards: [
        "`tool_results`: process rewards, each tool-calling turn 1 when all its results came back without an error, else 0 (docs/evaluation-and-sft.md).",
        '`"tool_results"`',
      ],
    },
  },
  "evaluator.swe_patch": {
    schema: SwePatchConfig,
    fields: {
      test_command: [
        "Run with `sh -c` in `repo_dir` of a fresh runtime with the agent's diff applied; with `{{test}}` once per test (exit 0 = pass), else once with its stdout (or `report`) parsed.",
        '`"pytest -rA"`',
      ],
      fail_to_pass: [
        "Tests that must pass after the patch (at least one).",
        '`["tests/test_add.py::test_neg"]`',
      ],
      pass_to_pass: ["Tests that must still pass.", '`["tests/test_add.py::test_pos"]`'],
      exclude_paths: ["Pathspecs left out of the agent's diff (git `:(exclude)` syntax).", '`["tests/"]`'],
      files: [
        "Files copied into the fresh runtime after the patch (hidden tests).",
        '`{"tests/test_hidden.py": "..."}`',
      ],
      repo_dir: ["The git repository, relative to the work dir.", '`"repo"`'],
      base_ref: ["What the agent started from.", '`"main"`'],
      result_pattern: [
        "Regex with named groups `status` and `test` for a log in no built-in format.",
        '`"^(?<status>PASS|FAIL) (?<test>.+)$"`',
      ],
      pass_statuses: ["Extra `status` values that mean a pass.", '`["XPASS"]`'],
      report: [
        "Read results from the machine report `test_command` writes to `{{report}}` (outside the repo), not the log.",
        '`"junit"`',
      ],
      ok_exit_codes: ["Exit codes of the single test run that still let its results count.", "`[0, 1]`"],
      test_files: [
        "Globs of test files and runner config the agent's diff may not touch (dropped from the patch).",
        '`["tests/**"]`',
      ],
      env: ["Environment for `test_command`.", '`{"PYTHONHASHSEED": "0"}`'],
      timeout_seconds: ["Budget per test command (default: the session's, at most 600 s).", "`300`"],
    },
  },
  "evaluator.harbor": {
    schema: HarborConfig,
    fields: {
      tests: [
        "The Harbor task's `tests/` dir (path -> file, as in `files`); `test.sh` runs with bash in the work dir.",
        '`{"test.sh": "...", "test_outputs.py": "..."}`',
      ],
      workdir: ["The task image's WORKDIR: in the tests it becomes the judge's work dir.", '`"/app"`'],
      outputs: ["What of the agent's work dir the judge gets (as for `test_on_output`).", '`["."]`'],
      outputs_denied: ["Output files never copied to the judge (as for `test_on_output`).", "`[]`"],
      outputs_replace: [
        "Output files that may replace what the judge's prepare steps built (as for `test_on_output`).",
        '`["src/**"]`',
      ],
      env: ["Environment for `test.sh` (task.toml's `[verifier.env]`).", '`{"MODE": "strict"}`'],
      timeout_seconds: ["Budget for `test.sh` (task.toml's `verifier.timeout_sec`).", "`600`"],
      reward_key: [
        "The reward.json key that is the reward; a reward.json with one key uses it whatever its name.",
        '`"accuracy"`',
      ],
      steps: [
        "A multi-step task (task.toml's `[[steps]]`): one session runs the harness once per step (`name`, `instruction`, `agent_timeout_seconds`), after putting the step's `files` in the work dir and running its `setup.sh` (`setup`) and `healthcheck`; the step's `tests` (over the task's), `env` and `timeout_seconds` judge it in a fresh runtime; below `min_reward` (or a failed step) the rest do not run; `artifacts` are kept after it. The task's `instruction` is the first step's; `timeout_seconds` covers all steps and their tests.",
        '`[{"name": "scaffold", "instruction": "...", "tests": {"test.sh": "..."}, "min_reward": 1}]`',
      ],
      step_reward_strategy: [
        "The task's reward from its steps' (Harbor's `multi_step_reward_strategy`): `mean` per reward key over all the task's steps (a missing key 0), or `final` (the task's last step). A step without a reward (failed, unjudged, never run) counts 0 for every key. Each step's reward is also a step reward on the last turn it produced.",
        '`"final"`',
      ],
    },
  },
  "settings.cli": {
    schema: CliSettings,
    fields: {
      extra_args: [
        "Appended to the CLI's argv (before the instruction where the CLI takes it last).",
        '`["--verbose"]`',
      ],
      max_retries: ["Retries the CLI makes on a failed model call (5xx, dropped stream), 0..10.", "`0`"],
      config: [
        "Deep-merged over the config file the preset writes (settings.json, config.toml, ...).",
        '`{"model_reasoning_effort": "low"}`',
      ],
    },
  },
  "settings.opencode": {
    schema: OpencodeSettings,
    fields: {
      extra_args: ["As for the other CLIs.", '`["--print-logs"]`'],
      max_retries: ["As for the other CLIs.", "`0`"],
      config: ["Deep-merged over `opencode.json`.", '`{"share": "disabled"}`'],
      title: [
        "Session title; given, OpenCode skips the extra model call that invents one. null restores that call.",
        "`null`",
      ],
    },
  },
  "settings.browser_use": {
    schema: BrowserUseSettings,
    fields: {
      extra_args: ["Arguments for the driver's Python interpreter.", '`["-X", "dev"]`'],
      max_retries: ["Retries of a failed model call (ChatOpenAI's `max_retries`), 0..10.", "`0`"],
      config: [
        'Deep-merged over the driver\'s settings: `agent` (browser-use `Agent` arguments, e.g. `max_steps`), `llm` (`ChatOpenAI` fields), `browser` (`BrowserProfile` fields), `chromium` (the binary), `display` (`"headless"` or `"xvfb"`: a window on a virtual display).',
        '`{"agent": {"max_steps": 5}}`',
      ],
      serve: [
        "The task's web app: a command started with `sh -c` in the work dir, inside the session's sandbox, before the browser opens; stopped when the agent ends. `{{polar_root}}` and `{{work_dir}}` as for `shell`.",
        '`"node {{polar_root}}/examples/computer-use/app/server.mjs --port 8765"`',
      ],
      start_url: [
        "The page the browser opens first; with `serve`, waited on until it answers.",
        '`"http://127.0.0.1:8765/"`',
      ],
      app_ready_seconds: ["How long the driver waits for `start_url` to answer.", "`60`"],
    },
  },
  "settings.shell": {
    schema: ShellSettings,
    fields: {
      command: [
        "Your agent as a command line, run with `sh -c` in the work dir; placeholders below.",
        '`"node {{polar_root}}/examples/agents/mini-agent.mjs {{instruction}}"`',
      ],
    },
  },
};

/** Every evaluator config and harness settings schema has a table (a new one must be documented). */
function coverageProblems(): string[] {
  const documented = new Set(Object.values(TABLES).map((t) => t.schema));
  const problems: string[] = [];
  for (const [name, schema] of Object.entries(EVALUATOR_CONFIGS)) {
    if (schemaFields(schema).length && !documented.has(schema)) problems.push(`evaluator ${name}: no table`);
  }
  for (const [name, schema] of Object.entries(HARNESS_SETTINGS)) {
    if (!documented.has(schema)) problems.push(`harness ${name}: no settings table`);
  }
  return problems;
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** The markdown table of one schema, or the fields FIELDS lacks or names in excess. */
export function renderTable(name: string): { table: string; problems: string[] } {
  const { schema, fields: docs } = TABLES[name];
  const fields: SchemaField[] = schemaFields(schema);
  const problems: string[] = [];
  for (const f of fields)
    if (!docs[f.path]) problems.push(`${name}: ${f.path} is in the schema but not documented`);
  for (const path of Object.keys(docs))
    if (!fields.some((f) => f.path === path))
      problems.push(`${name}: ${path} is documented but not in the schema`);
  const rows = fields.map((f) => {
    const [description, example] = docs[f.path] ?? ["", ""];
    const dflt = f.required ? "**required**" : f.default === null ? "(none)" : `\`${f.default}\``;
    return `| \`${f.path}\` | ${cell(f.type)} | ${cell(dflt)} | ${cell(example)} | ${cell(description)} |`;
  });
  const table = [
    "| field | type | default | example | meaning |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
  return { table, problems };
}

/**
 * The doc as compared: table cells without their padding, so the formatter's column alignment
 * (biome lays tables out) is not a difference.
 */
export function normalizeTables(doc: string): string {
  return doc
    .split("\n")
    .map((line) =>
      line.startsWith("|")
        ? line
            .replace(/\s*(?<!\\)\|\s*/g, "|")
            .replace(/\|:?-{3,}:?(?=\|)/g, "|---")
            .trim()
        : line,
    )
    .join("\n");
}

/** docs/tasks.md with every `<!-- fields: NAME -->` ... `<!-- /fields -->` block regenerated. */
export function renderDoc(doc: string): { doc: string; problems: string[] } {
  const problems = coverageProblems();
  const seen = new Set<string>();
  const out = doc.replace(/<!-- fields: ([\w.]+) -->\n[\s\S]*?<!-- \/fields -->/g, (_all, name: string) => {
    seen.add(name);
    if (!TABLES[name]) {
      problems.push(`docs/tasks.md names an unknown table ${name}`);
      return _all;
    }
    const { table, problems: p } = renderTable(name);
    problems.push(...p);
    return `<!-- fields: ${name} -->\n${table}\n<!-- /fields -->`;
  });
  for (const name of Object.keys(TABLES))
    if (!seen.has(name)) problems.push(`docs/tasks.md has no table ${name}`);
  return { doc: out, problems };
}

/**
 * The JSON Schema of a task line, for editors: TaskRequest as written (defaults optional), with
 * the descriptions above, and `agent.settings` / `evaluator.config` checked per harness and
 * evaluator (if/then), as `polar submit` checks them.
 */
export function taskJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(TaskRequest, { io: "input" }) as Record<string, unknown>;
  for (const [path, [description]] of Object.entries(TABLES.TaskRequest.fields)) {
    let node = schema as { properties?: Record<string, Record<string, unknown>> };
    const parts = path.split(".");
    for (const [i, part] of parts.entries()) {
      const next = node.properties?.[part];
      if (!next) break;
      if (i === parts.length - 1) next.description = description.replace(/\[([^\]]+)\]\(#[^)]+\)/g, "$1");
      node = next as typeof node;
    }
  }
  const branch = (outer: string, key: string, inner: string, value: string, sub: z.ZodType) => ({
    if: {
      properties: { [outer]: { properties: { [key]: { const: value } }, required: [key] } },
      required: [outer],
    },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable
    then: {
      properties: { [outer]: { properties: { [inner]: strip(z.toJSONSchema(sub, { io: "input" })) } } },
    },
  });
  schema.allOf = [
    ...Object.entries(HARNESS_SETTINGS).map(([h, s]) => branch("agent", "harness", "settings", h, s)),
    ...Object.entries(EVALUATOR_CONFIGS).map(([e, s]) => branch("evaluator", "strategy", "config", e, s)),
  ];
  return {
    $schema: schema.$schema,
    title: "Polar TaskRequest (one line of a TASKS.jsonl file)",
    description: "Generated by scripts/task-docs.ts from shared/schemas/task.ts; reference: docs/tasks.md.",
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "$schema")),
  };
}

function strip(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _, ...rest } = schema;
  return rest;
}

export const DOC_PATH = new URL("../docs/tasks.md", import.meta.url);
export const SCHEMA_PATH = new URL("../docs/task-request.schema.json", import.meta.url);

export function schemaText(): string {
  return `${JSON.stringify(taskJsonSchema(), null, 2)}\n`;
}

/** Compared as JSON, not text: the formatter may lay the file out differently. */
export function schemaIsCurrent(text: string): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(taskJsonSchema());
  } catch {
    return false;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const check = process.argv.includes("--check");
  const current = await readFile(DOC_PATH, "utf8");
  const { doc, problems } = renderDoc(current);
  for (const p of problems) console.error(`task-docs: ${p}`);
  const schemaNow = await readFile(SCHEMA_PATH, "utf8").catch(() => "");
  if (check) {
    const docStale = normalizeTables(doc) !== normalizeTables(current);
    if (docStale) console.error("task-docs: docs/tasks.md tables are out of date");
    const schemaStale = !schemaIsCurrent(schemaNow);
    if (schemaStale) console.error("task-docs: docs/task-request.schema.json is out of date");
    process.exit(problems.length || docStale || schemaStale ? 1 : 0);
  }
  await writeFile(DOC_PATH, doc);
  await writeFile(SCHEMA_PATH, schemaText());
  console.log(
    `task-docs: wrote docs/tasks.md and docs/task-request.schema.json${problems.length ? " (with problems above)" : ""}; ` +
      "lay them out with `npx biome check --write docs/tasks.md docs/task-request.schema.json`",
  );
  process.exit(problems.length ? 1 : 0);
}

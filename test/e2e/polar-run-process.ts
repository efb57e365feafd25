import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS, type CliHarnessName } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { SessionResult } from "../../shared/schemas/trajectory.ts";

/** What the harness e2e tests share: the scripted task, `polar run` as a child process, results. */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const POLAR = join(ROOT, "bin", "polar.js");
/** Loaded by path as the task's evaluator (see hello-file-evaluator.ts). */
export const EVALUATOR = join(ROOT, "test", "e2e", "hello-file-evaluator.ts");

export const INSTRUCTION = [
  "Create hello.txt containing hi, read it back, then answer.",
  "```polar-script",
  "shell: echo hi > hello.txt",
  "shell: cat hello.txt",
  "say: Done.",
  "```",
].join("\n");

/**
 * mini-swe-agent answers only through a command whose output starts with its submit marker (a
 * reply without a tool call is a format error it asks again about), so its script ends that way.
 */
export const SUBMIT_INSTRUCTION = INSTRUCTION.replace(
  "say: Done.",
  "shell: printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nDone.\\n'",
);

export function instructionFor(name: CliHarnessName): string {
  return name === "mini_swe_agent" ? SUBMIT_INSTRUCTION : INSTRUCTION;
}

/** `model` defaults to the schema's ("policy"); HF-style names with a slash work too. */
export function scriptedTask(
  name: CliHarnessName,
  taskId: string,
  extra: Record<string, unknown> = {},
  model?: string,
) {
  return {
    task_id: taskId,
    instruction: instructionFor(name),
    timeout_seconds: 90,
    // No retries: a failing call must not wait out the CLI's backoff. Otherwise preset defaults.
    agent: { harness: name, model, settings: { max_retries: 0 } },
    builder: { strategy: "prefix_merging" },
    evaluator: { strategy: EVALUATOR, config: { file: "hello.txt", expect: "hi" } },
    ...extra,
  };
}

/** Runs argv (a `polar run`, possibly under strace) to the end; stdout and stderr together. */
export function runProcess(
  argv: string[],
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd: ROOT,
      env: process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, output });
    });
  });
}

/** `polar ARGS` with its own environment, run to the end; stdout and stderr apart. */
export function runPolar(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [POLAR, ...args], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

/** A polar-script block for the dry-run policy: each line (of a solution) as a shell call. */
export function shellScript(lines: string[]): string {
  return ["", "```polar-script", ...lines.map((l) => `shell: ${l}`), "say: done", "```"].join("\n");
}

/** The one session result of `taskId` in a `polar run` store dir. */
export async function readSessionResult(
  storeDir: string,
  taskId: string,
  output: string,
): Promise<SessionResult> {
  const store = new DirectoryStore(storeDir);
  const key = (await store.list(keys.resultsOfTask(taskId)))[0];
  const bytes = key ? await store.get(key) : null;
  if (!bytes) throw new Error(`polar run wrote no result for ${taskId}:\n${output}`);
  return SessionResult.parse(JSON.parse(new TextDecoder().decode(bytes)));
}

/** One scripted session through `polar run`, read back; `cleanup` removes its temp dir. */
export interface OneSession {
  run: { code: number | null; output: string };
  result: SessionResult;
  captures: CaptureRecord[];
  /** The result file, for `polar inspect`. */
  resultFile: string;
  cleanup: () => Promise<void>;
}

/** Installs the harness (shared cache), runs `task` (one session) with `polar run`, reads it back. */
export async function runOneSession(harness: CliHarnessName, task: { task_id: string }): Promise<OneSession> {
  await installHarness(CLI_PRESETS[harness], { log: (line) => console.log(`[${harness}] ${line}`) });
  const dir = await mkdtemp(join(tmpdir(), `harness-e2e-${task.task_id}-`));
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
  const run = await runProcess(
    [process.execPath, POLAR, "run", tasksFile, "--out", join(dir, "out")],
    150_000,
  );
  const storeDir = join(dir, "out", "store");
  const result = await readSessionResult(storeDir, task.task_id, run.output);
  const captures = (await loadCaptures(new DirectoryStore(storeDir), task.task_id, result.session_id))
    .captures;
  return {
    run,
    result,
    captures,
    resultFile: join(storeDir, keys.result(task.task_id, result.session_id)),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * What the fault suite's flood tests share: an ordinary neighbour task (judged by its output, its
 * model calls and judge held inside the flood by a sleep) and one `polar run` of a task list as a
 * child process (bwrap, the dry-run policy, its own sessions dir), read back as results per task.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { readTaskResults } from "./runner-stack.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Two sessions that write hello.txt after a 6 s sleep, each scored 1 by `cat hello.txt`. */
export function neighbourTask(taskId: string) {
  return {
    task_id: taskId,
    num_samples: 2,
    instruction:
      "Create hello.txt.\n\n```polar-script\nshell: sleep 6\nshell: echo hi > hello.txt\nshell: cat hello.txt\nsay: Done.\n```\n",
    timeout_seconds: 90,
    agent: {
      harness: "shell",
      settings: { command: "node {{polar_root}}/examples/agents/mini-agent.mjs {{instruction}}" },
    },
    evaluator: { strategy: "test_on_output", config: { command: "cat hello.txt", expected_lines: ["hi"] } },
  };
}

export interface FloodRun {
  code: number | null;
  output: string;
  wallMs: number;
  store: DirectoryStore;
  results: Map<string, SessionResult[]>;
}

/** `polar run` of `tasks` under `dir` (killed after 170 s); `watch` sees the child while it runs. */
export async function runTasks(
  dir: string,
  tasks: ReadonlyArray<{ task_id: string }>,
  watch?: (child: ChildProcess) => void,
): Promise<FloodRun> {
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, tasks.map((t) => JSON.stringify(t)).join("\n"));
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin", "polar.js"), "run", tasksFile, "--out", join(dir, "out"), "--run", "4"],
    {
      cwd: ROOT,
      env: { ...process.env, POLAR_SESSIONS_DIR: join(dir, "sessions") },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (c) => (output += c));
  child.stderr.on("data", (c) => (output += c));
  watch?.(child);
  const code = await new Promise<number | null>((done, fail) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 170_000);
    child.on("error", fail);
    child.on("close", (c) => {
      clearTimeout(timer);
      done(c);
    });
  });
  const wallMs = Date.now() - started;
  const store = new DirectoryStore(join(dir, "out", "store"));
  const results = new Map<string, SessionResult[]>();
  for (const task of tasks) results.set(task.task_id, await readTaskResults(store, task.task_id));
  return { code, output, wallMs, store, results };
}

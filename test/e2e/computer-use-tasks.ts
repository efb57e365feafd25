import { readFile } from "node:fs/promises";

/*
 * The example computer-use tasks (examples/computer-use/tasks.jsonl) as the browser_use e2e tests
 * run them, plus an idle variant: the profile task with an agent that answers `done` at once.
 */

const EXAMPLES = new URL("../../examples/computer-use/tasks.jsonl", import.meta.url);

/** Debian's Chromium binary, the preset's default. */
export const CHROMIUM = "/usr/lib/chromium/chromium";
/** The port the example tasks' app listens on inside the sandbox. */
export const APP_PORT = 8765;

const IDLE_SCRIPT = [
  "```polar-script",
  'say: {"memory": "Nothing to do.", "action": [{"done": {"text": "Done, the name is set.", "success": true}}]}',
  "```",
].join("\n");

type Task = { task_id: string; instruction: string } & Record<string, unknown>;

export async function exampleTasks(): Promise<Map<string, Task>> {
  const lines = (await readFile(EXAMPLES, "utf8")).trim().split("\n");
  return new Map(lines.map((line) => JSON.parse(line) as Task).map((t) => [t.task_id, t]));
}

/** The profile task with a script that does nothing but claim it is done. */
export function idleTask(profile: Task, taskId = "cu-idle"): Task {
  return {
    ...profile,
    task_id: taskId,
    instruction: profile.instruction.replace(/```polar-script[\s\S]*```/, IDLE_SCRIPT),
  };
}

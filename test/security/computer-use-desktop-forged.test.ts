import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { readSessionResult, runPolar } from "../e2e/polar-run-process.ts";

/*
 * Issue 49, item 7 (the desktop's part): the desktop code task's judge reads `.desktop/typed.txt`
 * from the work dir, which every process the agent runs can write (one user, one sandbox). A harness
 * with a shell wrote the code there itself and was paid 1 without the app or the screen. The judge
 * now refuses every harness with a shell: here the `shell` harness writes the file through
 * `polar run` (bwrap), and the session ends ERROR, unpaid.
 */
const problem = bwrapProblem();
const CODE = "K7Q-42X";

let dir: string;
let result: SessionResult;

beforeAll(async () => {
  if (problem) return;
  dir = await mkdtemp(join(tmpdir(), "polar-cu-desktop-forged-"));
  const task = {
    task_id: "cu-desktop-forged",
    instruction: "(the agent's commands are the shell command)",
    timeout_seconds: 60,
    agent: {
      harness: "shell",
      settings: { command: `mkdir -p .desktop && printf '%s' '${CODE}' > .desktop/typed.txt` },
    },
    evaluator: { strategy: "./examples/computer-use/desktop-judge.mjs", config: { code: CODE } },
  };
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
  const env = { ...process.env, POLAR_SESSIONS_DIR: join(dir, "sessions") };
  const run = await runPolar(["run", tasksFile, "--out", join(dir, "out")], env, 120_000);
  result = await readSessionResult(join(dir, "out", "store"), "cu-desktop-forged", run.stdout + run.stderr);
}, 150_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(problem !== null)("the desktop judge and a harness with a shell", () => {
  it("refuses the session: a typed.txt the agent could write pays nothing", () => {
    const account = JSON.stringify({ status: result.status, error: result.error, reward: result.reward });
    expect(result.reward, account).not.toBe(1);
    expect(result.status, account).toBe("ERROR");
    expect(result.error, account).toMatch(/desktop_code judges only sessions of a harness without a shell/);
    expect(result.error, account).toMatch(/harness shell can write \.desktop\/typed\.txt/);
  });
});

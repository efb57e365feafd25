import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { readSessionResult, runPolar } from "../e2e/polar-run-process.ts";

/*
 * Issue 49, item 7: the web form task's judge reads the app's event log from the work dir, which
 * the agent's user can write. A harness with a shell paired with the form app could append the
 * expected save itself and be paid 1 without touching the form. The judge now refuses every
 * harness but the shell-free browser preset: here the `shell` harness forges the log through
 * `polar run` (bwrap), and the session ends ERROR, unpaid.
 */
const problem = bwrapProblem();
const SEED = JSON.stringify({
  title: "Profile",
  fields: [{ name: "full_name", label: "Full name", type: "text", value: "" }],
});
const FORGED = JSON.stringify({ type: "save", values: { full_name: "Ada Lovelace" } });

let dir: string;
let result: SessionResult;

beforeAll(async () => {
  if (problem) return;
  dir = await mkdtemp(join(tmpdir(), "polar-cu-forged-"));
  const task = {
    task_id: "cu-forged-log",
    instruction: "(the agent's commands are the shell command)",
    timeout_seconds: 60,
    agent: {
      harness: "shell",
      settings: { command: `mkdir -p .app && echo '${FORGED}' >> .app/events.jsonl` },
    },
    runtime: { prepare: [`mkdir -p .app && printf '%s\\n' '${SEED}' > .app/seed.json`] },
    evaluator: {
      strategy: "./examples/computer-use/judge.mjs",
      config: { expect: { full_name: "Ada Lovelace" } },
    },
  };
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
  const env = { ...process.env, POLAR_SESSIONS_DIR: join(dir, "sessions") };
  const run = await runPolar(["run", tasksFile, "--out", join(dir, "out")], env, 120_000);
  result = await readSessionResult(join(dir, "out", "store"), "cu-forged-log", run.stdout + run.stderr);
}, 150_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(problem !== null)("the web form judge and a harness with a shell", () => {
  it("refuses the session: a log the agent could write pays nothing", () => {
    const account = JSON.stringify({ status: result.status, error: result.error, reward: result.reward });
    expect(result.reward, account).not.toBe(1);
    expect(result.status, account).toBe("ERROR");
    expect(result.error, account).toMatch(
      /computer_use_form judges only browser_use sessions: harness shell/,
    );
  });
});

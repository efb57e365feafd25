import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { COMPUTER_USE_PRESETS } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { CHROMIUM, exampleTasks } from "../e2e/computer-use-tasks.ts";
import { POLAR, readSessionResult, runProcess } from "../e2e/polar-run-process.ts";
import { chromiumMissing } from "../support/chromium.ts";
import { bwrapMissing } from "../support/sandbox-lanes.ts";

/*
 * One example computer-use task (examples/computer-use/, the profile form) through `polar run
 * --upstream` with the real browser-use harness in bwrap, against a real engine: the task as
 * shipped, minus its dry-run script, with one step, no retries, greedy sampling and a short
 * answer (a random-weight model under browser-use's JSON schema writes whitespace to the cap).
 */

export const BROWSER_TASK = "engine-browser-use";

/** Why the browser session cannot run here, or null. */
export function browserSessionMissing(): string | null {
  return bwrapMissing() ?? chromiumMissing(CHROMIUM);
}

export interface BrowserSession {
  result: SessionResult;
  captures: CaptureRecord[];
  store: DirectoryStore;
  storeDir: string;
  output: string;
  cleanup: () => Promise<void>;
}

export async function runBrowserSession(upstream: string, maxTokens: number): Promise<BrowserSession> {
  const preset = COMPUTER_USE_PRESETS.browser_use;
  await installHarness(preset, { log: (line) => console.log(`[browser_use] ${line}`) });
  const profile = (await exampleTasks()).get("cu-profile-name");
  if (!profile) throw new Error("examples/computer-use/tasks.jsonl lost cu-profile-name");
  const agent = profile.agent as { settings: Record<string, unknown> };
  const task = {
    ...profile,
    task_id: BROWSER_TASK,
    instruction: profile.instruction.replace(/\s*```polar-script[\s\S]*```\s*/, ""),
    timeout_seconds: 240,
    agent: {
      ...agent,
      settings: { ...agent.settings, max_retries: 0, config: { agent: { max_steps: 1 } } },
      // A salt of this run's own: the call's prompt is computed cold, with no KV block of an
      // earlier request, as the test's reference answer is.
      sampling: { temperature: 0, max_tokens: maxTokens, cache_salt: `browser-${randomUUID()}` },
    },
  };
  const dir = await mkdtemp(join(tmpdir(), "engine-browser-use-"));
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
  const storeDir = join(dir, "out", "store");
  const polar = [
    process.execPath,
    POLAR,
    "run",
    tasksFile,
    "--out",
    join(dir, "out"),
    "--upstream",
    upstream,
  ];
  const { output } = await runProcess(polar, 280_000);
  const store = new DirectoryStore(storeDir);
  const result = await readSessionResult(storeDir, BROWSER_TASK, output);
  const { captures } = await loadCaptures(store, BROWSER_TASK, result.session_id);
  return {
    result,
    captures,
    store,
    storeDir,
    output,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

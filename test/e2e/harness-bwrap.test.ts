import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS, type CliHarnessName } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { bwrapMissing } from "../support/sandbox-lanes.ts";
import { POLAR, readSessionResult, runProcess, scriptedTask } from "./polar-run-process.ts";

/*
 * Every installed harness (npm CLIs and Python agents) in one `polar run` on the bwrap runtime: a network namespace with no interface
 * but loopback, the proxy reachable only through the runtime's Unix-socket bridge. A CLI that
 * needed anything from the network to start, authenticate or answer fails here.
 */

const bwrapProblem = bwrapMissing();
const bwrapWorks = bwrapProblem === null;
if (bwrapProblem) console.log(`${bwrapProblem}: the no-network run is skipped`);

const NAMES = Object.keys(CLI_PRESETS) as CliHarnessName[];
/** A Hugging Face-style name, as real deployments serve: the slash must survive every CLI's config. */
const MODEL = "Qwen/Qwen3-8B";
const taskIdOf = (name: CliHarnessName) => `bwrap-${name.replaceAll("_", "-")}`;

describe.skipIf(!bwrapWorks)("every harness preset in the bwrap runtime (no network)", () => {
  let dir: string;
  let output = "";
  const results = new Map<CliHarnessName, SessionResult>();
  const captures = new Map<CliHarnessName, CaptureRecord[]>();

  beforeAll(async () => {
    for (const name of NAMES) await installHarness(CLI_PRESETS[name]);
    dir = await mkdtemp(join(tmpdir(), "harness-bwrap-"));
    const tasks = NAMES.map((name) =>
      JSON.stringify(scriptedTask(name, taskIdOf(name), { runtime: { backend: "bwrap" } }, MODEL)),
    );
    const file = join(dir, "tasks.jsonl");
    await writeFile(file, `${tasks.join("\n")}\n`);
    const run = await runProcess(
      [process.execPath, POLAR, "run", file, "--out", join(dir, "out"), "--run", "2"],
      240_000,
    );
    output = run.output;
    const storeDir = join(dir, "out", "store");
    for (const name of NAMES) {
      const result = await readSessionResult(storeDir, taskIdOf(name), output);
      results.set(name, result);
      const loaded = await loadCaptures(new DirectoryStore(storeDir), taskIdOf(name), result.session_id);
      captures.set(name, loaded.captures);
    }
  }, 400_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(NAMES)("%s completes, answers and writes its file with the network cut", (name) => {
    const result = results.get(name);
    expect(result?.status, `${result?.error}\n${output}`).toBe("COMPLETED");
    expect(result?.agent).toEqual({ exit_code: 0, timed_out: false, final_answer: "Done." });
    expect(result?.evaluation?.metadata).toMatchObject({ content: "hi\n" });
    expect(result?.trajectory.reconstruction_stats.trainable_tokens ?? 0).toBeGreaterThan(0);
    // Every call named the task's model, slash and all.
    const models = new Set(captures.get(name)?.map((c) => c.model_requested));
    expect([...models]).toEqual([MODEL]);
  });
});

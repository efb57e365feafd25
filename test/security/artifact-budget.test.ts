import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_ARTIFACT_BYTES } from "../../batch-runner/pipeline/keep-artifacts.ts";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";

/*
 * Issue 49, item 5: steps multiplied the artifact cap. Each step kept its artifacts, and the end
 * the task's, each call with its own 64 MiB: 8 steps with `artifacts: ["big"]` and two 30 MB files
 * kept 516 MB for one session. Here one `polar run` session of 2 such steps (the task's artifacts
 * `big` too): before the fix it kept 180 MB (3 copies); now everything it keeps fits one budget.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const problem = bwrapProblem();
let dir: string | undefined;

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function bytesUnder(path: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(path, { withFileTypes: true, recursive: true }))
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name))).size;
  return total;
}

describe.skipIf(problem !== null)("what one session keeps (issue 49)", () => {
  it("every step's artifacts and the end's fit one per-session budget", async () => {
    dir = await mkdtemp(join(tmpdir(), "polar-artifact-budget-"));
    const mb30 = "head -c 30000000 /dev/zero";
    const task = {
      task_id: "steps-keep-big",
      instruction: "(the agent's commands are the shell command)",
      timeout_seconds: 120,
      artifacts: ["big"],
      agent: {
        harness: "shell",
        settings: { command: `[ -e big/b ] || { mkdir -p big && ${mb30} > big/a && ${mb30} > big/b; }` },
      },
      evaluator: {
        strategy: "harbor",
        config: {
          // The judge needs none of it: only its own files reach it.
          outputs: ["none"],
          tests: { "test.sh": "echo 1 > /logs/verifier/reward.txt" },
          steps: ["one", "two"].map((name) => ({
            name,
            instruction: `step ${name}`,
            artifacts: ["big"],
          })),
        },
      },
    };
    const tasksFile = join(dir, "tasks.jsonl");
    await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
    let output = "";
    const code = await new Promise<number | null>((done, fail) => {
      const child = spawn(
        process.execPath,
        [join(ROOT, "bin", "polar.js"), "run", tasksFile, "--out", join(dir as string, "out")],
        {
          cwd: ROOT,
          env: { ...process.env, POLAR_SESSIONS_DIR: join(dir as string, "sessions") },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stdout.on("data", (c) => (output += c));
      child.stderr.on("data", (c) => (output += c));
      child.on("error", fail);
      child.on("close", done);
    });
    expect(code, output.slice(-3000)).toBe(0);
    const resultsDir = join(dir, "out", "store", "results", task.task_id);
    const [file] = await readdir(resultsDir);
    const result = JSON.parse(await readFile(join(resultsDir, file as string), "utf8"));
    expect(result.status, JSON.stringify(result.error)).toBe("COMPLETED");
    expect(result.reward).toBe(1);
    const kept = await bytesUnder(join(dir, "out", "store", "artifacts"));
    // The first step's two files fit; what came after them did not.
    expect(kept).toBeGreaterThanOrEqual(60_000_000);
    expect(kept).toBeLessThanOrEqual(MAX_ARTIFACT_BYTES + 1024 * 1024);
    const ofSteps = (result.artifacts as string[]).filter((k) => k.includes("/big/"));
    expect(ofSteps.map((k) => k.split("/").slice(4).join("/"))).toEqual([
      "steps/one/workdir/big/a",
      "steps/one/workdir/big/b",
    ]);
  }, 180_000);
});

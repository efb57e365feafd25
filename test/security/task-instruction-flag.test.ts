import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import type { PresetContext } from "../../batch-runner/harness/preset.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";
import { AgentSpec, SessionJob, TaskRequest } from "../../shared/schemas/task.ts";
import { validateTask } from "../../shared/tasks/validate-task.ts";

/*
 * A task is data: its instruction reaches every harness CLI as a command-line argument, so one
 * starting with "-" is parsed as a flag. With the real Codex, the instruction `--version` made
 * the session print Codex's version and exit 0 without a single model call; others could switch a
 * CLI's permissions, config or update behaviour. Such an instruction is refused at submission and
 * by the runner when the job arrives (the same schema).
 */
const task = (instruction: string) => ({
  task_id: "t",
  instruction,
  agent: { harness: "codex" },
});

describe("an instruction that starts with a dash", () => {
  it("is read as a flag by a real harness CLI (the attack)", async () => {
    const installed = await installHarness(CLI_PRESETS.codex);
    const home = await mkdtemp(join(tmpdir(), "polar-flag-"));
    const ctx: PresetContext = {
      agent: AgentSpec.parse({ harness: "codex" }),
      instruction: "--version",
      proxyUrl: "http://127.0.0.1:9",
      sessionToken: "t",
      homeDir: home,
      workDir: home,
    };
    const inv = CLI_PRESETS.codex.invocation(ctx, installed?.binDir ?? null);
    const run = spawnSync(inv.argv[0] as string, inv.argv.slice(1), {
      env: { ...inv.env, PATH: process.env.PATH ?? "" },
      input: "",
      encoding: "utf8",
      timeout: 30_000,
    });
    // No task ran: the CLI answered the flag.
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^codex-cli-exec 0\.169\.0$/m);
    await rm(home, { recursive: true, force: true });
  }, 120_000);

  it("is refused at submission, naming the field", () => {
    const out = validateTask(task("--version"));
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.problems.join("\n")).toMatch(/^instruction: must not start with "-"/m);
    expect(validateTask(task("-p evil")).ok).toBe(false);
  });

  it("is refused by the runner's job schema, so a job put on the queue directly cannot carry one", () => {
    const job = { task_id: "t", session_id: "t-0", sample_index: 0, task: TaskRequest.parse(task("ok")) };
    expect(SessionJob.safeParse(job).success).toBe(true);
    const bad = { ...job, task: { ...job.task, instruction: "--dangerously-bypass-approvals-and-sandbox" } };
    expect(SessionJob.safeParse(bad).success).toBe(false);
  });

  it("a dash inside, or after a leading space, is text", () => {
    expect(validateTask(task("Fix the bug - then run --help")).ok).toBe(true);
    expect(validateTask(task(" - Fix the bug")).ok).toBe(true);
  });
});

import { join } from "node:path";
import { type HarborStep, MAX_HARBOR_STEPS } from "../../shared/schemas/task-settings.ts";
import { artifactPaths } from "./artifacts.ts";
import { rewritePaths } from "./harbor-paths.ts";
import { HarborTaskRefused } from "./harbor-refusal.ts";
import { entryKind, listTaskFiles } from "./task-files.ts";
import type { TaskToml } from "./task-toml.ts";

/**
 * A multi-step Harbor task's `[[steps]]` with their `steps/<name>/` dirs (Harbor's layout:
 * `instruction.md`, `tests/`, `workdir/` uploaded into the WORKDIR before the step, its `setup.sh`
 * run there, `solution/`) -> the `harbor` evaluator's `steps` (harbor-steps.ts runs them).
 */
export interface ImportedSteps {
  steps: HarborStep[];
  warnings: string[];
}

const STEP_ENTRIES = new Set(["instruction.md", "tests", "workdir", "solution"]);

export async function readSteps(
  dir: string,
  toml: TaskToml,
  workdir: string,
  text: (rel: string) => Promise<string>,
): Promise<ImportedSteps> {
  const declared = toml.steps ?? [];
  const warnings: string[] = [];
  const names = new Set(declared.map((s) => s.name.toLowerCase()));
  if (names.size !== declared.length) throw new HarborTaskRefused("task.toml: steps: two steps share a name");
  if (declared.length > MAX_HARBOR_STEPS)
    throw new HarborTaskRefused(
      `task.toml: steps: ${declared.length} steps, more than the ${MAX_HARBOR_STEPS} a task may have`,
    );
  const onDisk = await listTaskFiles(dir, "steps");
  for (const file of onDisk) {
    const [name, entry] = file.split("/");
    if (!declared.some((s) => s.name === name))
      throw new HarborTaskRefused(`steps/${name}: not a step of task.toml's [[steps]]`);
    if (!STEP_ENTRIES.has(entry ?? ""))
      throw new HarborTaskRefused(
        `steps/${name}/${entry}: not part of a Harbor step (instruction.md, tests/, workdir/, solution/)`,
      );
  }
  if ((await entryKind(dir, "instruction.md")) === "file")
    warnings.push("instruction.md: not read (a multi-step task's instructions are its steps')");
  const toLocal = { [workdir]: "." };
  const steps: HarborStep[] = [];
  for (const step of declared) {
    const base = join("steps", step.name);
    if ((await entryKind(dir, join(base, "instruction.md"))) !== "file")
      throw new HarborTaskRefused(`${base}/instruction.md: missing (every step has its instruction)`);
    const instruction = rewritePaths(await text(join(base, "instruction.md")), toLocal).trim();
    if (instruction === "")
      throw new HarborTaskRefused(`${base}/instruction.md: empty (the agent would get no task)`);
    const tests: Record<string, string> = {};
    for (const file of await listTaskFiles(dir, join(base, "tests")))
      tests[file] = await text(join(base, "tests", file));
    const files: Record<string, string> = {};
    for (const file of await listTaskFiles(dir, join(base, "workdir"))) {
      const body = await text(join(base, "workdir", file));
      // setup.sh runs in the agent's sandbox: its WORKDIR is the work dir, Harbor's /logs the judge's dir under HOME.
      files[file] =
        file === "setup.sh" ? rewritePaths(body, { ...toLocal, "/logs": "$HOME/harbor/logs" }) : body;
    }
    const artifacts = artifactPaths(step.artifacts ?? [], workdir, `steps ${step.name} artifacts`);
    warnings.push(...artifacts.warnings);
    const agentTimeout = step.agent?.timeout_sec ?? toml.agent?.timeout_sec ?? undefined;
    const check = step.healthcheck;
    steps.push({
      name: step.name,
      instruction,
      tests,
      files,
      setup: Object.hasOwn(files, "setup.sh"),
      ...(agentTimeout ? { agent_timeout_seconds: agentTimeout } : {}),
      ...(step.verifier?.timeout_sec ? { timeout_seconds: step.verifier.timeout_sec } : {}),
      env: step.verifier?.env ?? {},
      ...(step.min_reward !== null && step.min_reward !== undefined ? { min_reward: step.min_reward } : {}),
      ...(check
        ? {
            healthcheck: {
              command: rewritePaths(check.command, toLocal),
              interval_sec: check.interval_sec ?? 5,
              timeout_sec: check.timeout_sec ?? 30,
              retries: check.retries ?? 3,
            },
          }
        : {}),
      artifacts: artifacts.paths,
    });
  }
  return { steps, warnings };
}

/** Harbor's verifier timeout when a task names none (`VerifierConfig.timeout_sec`). */
const HARBOR_VERIFIER_SECONDS = 600;

/**
 * The session's budget for all its steps: every step's agent time and its tests' (they run inside the
 * session, between steps). Only when every step's agent time is known; else the task default stands.
 */
export function stepsBudget(steps: readonly HarborStep[], toml: TaskToml): { timeout_seconds?: number } {
  if (steps.some((s) => !s.agent_timeout_seconds)) return {};
  const seconds = steps.reduce(
    (sum, s) =>
      sum +
      (s.agent_timeout_seconds ?? 0) +
      (s.timeout_seconds ?? toml.verifier?.timeout_sec ?? HARBOR_VERIFIER_SECONDS),
    0,
  );
  return { timeout_seconds: Math.min(Math.ceil(seconds), 7 * 24 * 3600) };
}

import { keys } from "../../shared/keys.ts";
import type { EvaluationContext, SessionStep, StepOutcome } from "../evaluation/evaluator.ts";
import { stopAfter } from "../evaluation/harbor-steps.ts";
import type { HarnessInvocation } from "../harness/preset.ts";
import type { ExecOptions, ExecResult, Runtime } from "../runtime/runtime.ts";
import { keepArtifacts } from "./keep-artifacts.ts";
import type { PreparedSession, SessionDeps } from "./session-types.ts";

/**
 * A stepped session (a multi-step Harbor task, as Harbor's `MultiStepTrial` runs it): in the one
 * runtime, per step, its files land in the work dir, its `setup.sh` and healthcheck run, the harness
 * runs with the step's instruction, the step's artifacts are kept, and the evaluator judges the step
 * (in a fresh runtime holding the work dir as the step left it). A failed step, or one below its
 * `min_reward`, ends the steps; so does the session's budget or a limit. The last harness run is
 * the session's exec (its status); POSTRUN turns the outcomes into the task's reward.
 */
export async function runSteps(
  deps: SessionDeps,
  s: PreparedSession & { steps: { step: SessionStep; invocation: HarnessInvocation }[] },
  opts: Pick<ExecOptions, "signal" | "onStdout" | "onStderr">,
): Promise<{ exec: ExecResult | null; outcomes: StepOutcome[]; artifacts: string[] }> {
  const started = Date.now();
  const outcomes: StepOutcome[] = [];
  const artifacts: string[] = [];
  let exec: ExecResult | null = null;
  const capturesKey = keys.capturesOfSession(s.job.task_id, s.job.session_id);
  const captureIds = async () =>
    new Set(
      (await deps.store.list(capturesKey)).map((k) => k.slice(capturesKey.length).replace(/\.json\.gz$/, "")),
    );
  for (const [index, { step, invocation }] of s.steps.entries()) {
    const left = s.budgetMs - (Date.now() - started);
    if (left <= 0 || opts.signal?.aborted) break;
    const outcome: StepOutcome = { name: step.name, evaluation: null, error: null, captureIds: [] };
    outcomes.push(outcome);
    outcome.error = await prepareStep(s.runtime, step, left);
    if (outcome.error !== null) break;
    const before = await captureIds();
    opts.onStdout?.(`\n[polar] step ${index + 1}/${s.steps.length}: ${step.name}\n`);
    const timeoutMs = Math.min(left, step.timeoutMs ?? left);
    exec = await s.runtime.exec(invocation.argv, {
      ...opts,
      env: invocation.env,
      stdin: invocation.stdin,
      timeoutMs,
    });
    outcome.captureIds = [...(await captureIds())].filter((id) => !before.has(id)).sort();
    // A cancelled run or a limit hit ends the session ERROR: nothing more to judge.
    if (opts.signal?.aborted || exec.limit) {
      outcome.error = exec.limit ? `limit:${exec.limit}` : "cancelled";
      break;
    }
    artifacts.push(...(await keepStepArtifacts(deps, s, step)));
    try {
      outcome.evaluation = (await s.evaluator.evaluateStep?.(index, stepContext(s, deps, exec))) ?? null;
    } catch (err) {
      outcome.error = `step ${step.name} was not judged: ${(err as Error).message}`;
    }
    // As in Harbor, a step whose harness failed or ran past its own time is still judged; it is said so.
    if (outcome.error === null && (exec.timedOut || exec.exitCode !== 0))
      outcome.error = `step ${step.name}: ${exec.timedOut ? `the agent ran past its ${Math.round(timeoutMs / 1000)} s` : `the harness exited ${exec.exitCode ?? exec.signal}`}`;
    if (exec.timedOut && Date.now() - started >= s.budgetMs) break;
    const stop = stopAfter(step, outcome);
    if (stop !== null) {
      deps.log(`session ${s.job.session_id}: ${stop}; the remaining steps do not run`);
      break;
    }
  }
  return { exec, outcomes, artifacts };
}

/** The step's files, `setup.sh` and healthcheck, in the sandbox as the agent's user; why it failed, or null. */
async function prepareStep(runtime: Runtime, step: SessionStep, timeoutMs: number): Promise<string | null> {
  for (const [path, text] of Object.entries(step.files)) {
    // Written by a shell in the sandbox, never by the runner: the agent may have left a link there.
    const res = await runtime.exec(["sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", path], {
      stdin: text,
      timeoutMs,
    });
    if (res.exitCode !== 0)
      return `step ${step.name}: writing ${path} failed: ${res.stderr.trim().slice(-300)}`;
  }
  if (step.setup) {
    const res = await runtime.exec(["bash", "setup.sh"], { timeoutMs });
    if (res.exitCode !== 0)
      return `step ${step.name}: setup.sh ${res.timedOut ? "timed out" : `exited ${res.exitCode}`}: ${(res.stderr || res.stdout).trim().slice(-300)}`;
  }
  const check = step.healthcheck;
  if (check) {
    let last = "";
    for (let attempt = 1; attempt <= check.retries; attempt++) {
      const res = await runtime.exec(["sh", "-c", check.command], { timeoutMs: check.timeoutMs });
      if (res.exitCode === 0) return null;
      last = res.timedOut ? "timed out" : `exited ${res.exitCode}`;
      if (attempt < check.retries) await new Promise((r) => setTimeout(r, check.intervalMs));
    }
    return `step ${step.name}: its healthcheck (${check.command}) failed ${check.retries} times (last ${last})`;
  }
  return null;
}

function stepContext(s: PreparedSession, deps: SessionDeps, exec: ExecResult): EvaluationContext {
  return {
    runtime: s.runtime,
    workDir: s.runtime.workDir,
    agent: { exitCode: exec.exitCode, timedOut: exec.timedOut, finalAnswer: null },
    timeoutMs: s.budgetMs,
    config: s.task.evaluator.config,
    freshRuntime: () => s.fresh.get(),
    hostFiles: deps.hostFiles,
    harness: s.task.agent.harness,
  };
}

/** The task's and the step's artifacts as the step left them: `steps/{name}/workdir/{path}`. */
async function keepStepArtifacts(
  deps: SessionDeps,
  s: PreparedSession,
  step: SessionStep,
): Promise<string[]> {
  const paths = [...(s.task.artifacts ?? []), ...step.artifacts];
  if (paths.length === 0) return [];
  const kept = await keepArtifacts({
    store: deps.store,
    taskId: s.job.task_id,
    sessionId: s.job.session_id,
    attempt: s.attempt,
    homeDir: s.runtime.workDir,
    paths,
    keyPrefix: `steps/${step.name}/workdir/`,
    budget: s.artifactBudget,
  }).catch((err) => ({ keys: [], skipped: [`not kept: ${(err as Error).message}`] }));
  for (const why of kept.skipped)
    deps.log(`session ${s.job.session_id}: step ${step.name} artifact skipped: ${why}`);
  return kept.keys;
}

import { keys } from "../../shared/keys.ts";
import type { SessionResult, Trajectory, TrajectoryStatus } from "../../shared/schemas/trajectory.ts";
import { evaluateSession } from "../evaluation/evaluate-session.ts";
import type { HarnessOutcome } from "../harness/preset.ts";
import { emptyTrajectory } from "../reconstruction/empty-trajectory.ts";
import { limitReason } from "../runtime/limits.ts";
import { failureDetail } from "./harness-output.ts";
import { keepArtifacts } from "./keep-artifacts.ts";
import { commitResult } from "./session-result.ts";
import type { RanSession, SessionDeps } from "./session-types.ts";

/** What the run ended as: a timeout or crash still yields the partial captures as a trajectory. */
export function runStatus(
  s: RanSession,
  outcome: HarnessOutcome,
): { status: TrajectoryStatus; error: string | null } {
  if (s.cancelled) return { status: "ERROR", error: `task ${s.task.task_id} was cancelled` };
  const exec = s.exec;
  if (!exec) return { status: "ERROR", error: "the harness did not run" };
  // A limit kills the session whatever the harness did next (a timeout included): name the limit.
  if (exec.limit) return { status: "ERROR", error: limitReason(exec.limit, s.limits) };
  // A stepped session (a multi-step Harbor trial) completes once a step was judged: a step's harness
  // failing or running past its own time is that step's (its outcome says so), unless the session's
  // whole budget ran out.
  if (s.stepOutcomes?.some((o) => o.evaluation !== null) && !(exec.timedOut && s.runMs >= s.budgetMs))
    return { status: "COMPLETED", error: null };
  if (exec.timedOut)
    return { status: "TIMEOUT", error: `the harness exceeded its budget of ${s.task.timeout_seconds}s` };
  if (exec.exitCode !== 0) {
    const why = exec.exitCode === null ? `was killed by ${exec.signal}` : `exited with code ${exec.exitCode}`;
    const detail = failureDetail(s.output?.stderr ?? exec.stderr, s.output?.stdout ?? exec.stdout);
    return { status: "ERROR", error: `the harness ${why}${detail ? `: ${detail}` : ""}` };
  }
  // Some CLIs (Pi) exit 0 even when every model call failed; their JSON output says so.
  if (!outcome.success) {
    return {
      status: "ERROR",
      error: `the harness exited 0 but its output reports failure (${s.preset.name})`,
    };
  }
  return { status: "COMPLETED", error: null };
}

/**
 * POSTRUN: reconstruct this attempt's captures, evaluate in the still-live runtime, write the result
 * (and the group shard when it is the task's last session), then tear the runtime down.
 */
export async function postrunSession(deps: SessionDeps, s: RanSession): Promise<void> {
  const started = Date.now();
  try {
    const outcome: HarnessOutcome = s.exec
      ? s.preset.parseOutput(s.exec.stdout, s.exec.stderr, s.exec.exitCode)
      : { finalAnswer: null, success: false };
    const { status, error } = runStatus(s, outcome);
    let trajectory: Trajectory;
    try {
      trajectory = await deps.reconstruct({
        store: deps.store,
        task: s.task,
        sessionId: s.job.session_id,
        attempt: s.attempt,
        status,
      });
      trajectory = { ...trajectory, status, error };
    } catch (err) {
      trajectory = emptyTrajectory(
        "ERROR",
        s.task.builder.strategy,
        `reconstruction failed: ${(err as Error).message}`,
      );
    }
    const agent = {
      exitCode: s.exec?.exitCode ?? null,
      timedOut: s.exec?.timedOut ?? false,
      finalAnswer: outcome.finalAnswer,
    };
    // Only a COMPLETED session is evaluated; a failing evaluator makes the session ERROR.
    const evaluated = await evaluateSession(s.evaluator, trajectory, {
      runtime: s.runtime,
      workDir: s.runtime.workDir,
      agent,
      timeoutMs: s.budgetMs,
      config: s.task.evaluator.config,
      freshRuntime: () => s.fresh.get(),
      hostFiles: deps.hostFiles,
      harness: s.task.agent.harness,
      ...(s.stepOutcomes ? { steps: s.stepOutcomes } : {}),
    });
    trajectory = evaluated.trajectory;
    const artifacts = await keepArtifacts({
      store: deps.store,
      taskId: s.job.task_id,
      sessionId: s.job.session_id,
      attempt: s.attempt,
      homeDir: s.runtime.homeDir,
      paths: s.preset.artifacts,
      budget: s.artifactBudget,
    }).catch((err) => {
      deps.log(`session ${s.job.session_id}: artifacts not kept: ${(err as Error).message}`);
      return { keys: [], skipped: [] };
    });
    for (const why of artifacts.skipped) deps.log(`session ${s.job.session_id}: artifact skipped: ${why}`);
    const taskArtifacts = await keepTaskArtifacts(deps, s);
    const harnessOutput = await keepHarnessOutput(deps, s);
    const result: SessionResult = {
      v: 1,
      task_id: s.job.task_id,
      session_id: s.job.session_id,
      sample_index: s.job.sample_index,
      attempt: s.attempt,
      status: trajectory.status,
      reward: evaluated.reward,
      timings: {
        queued_at: s.msg.sentAt ? new Date(s.msg.sentAt).toISOString() : null,
        init_ms: s.initMs,
        ready_wait_ms: s.readyWaitMs,
        run_ms: s.runMs,
        postrun_ms: Date.now() - started,
        finished_at: new Date().toISOString(),
      },
      agent: { exit_code: agent.exitCode, timed_out: agent.timedOut, final_answer: agent.finalAnswer },
      evaluation: evaluated.record,
      trajectory,
      error: trajectory.error ?? evaluated.error,
      artifacts: [...artifacts.keys, ...(s.stepArtifacts ?? []), ...taskArtifacts, ...harnessOutput],
    };
    await commitResult(deps, s.job, result);
  } finally {
    await Promise.all([
      s.runtime
        .stop()
        .catch((err) => deps.log(`session ${s.job.session_id}: teardown: ${(err as Error).message}`)),
      s.fresh.dispose(),
    ]);
  }
}

/** The task's `artifacts` (work-dir paths) as the run left them: `artifacts/{task}/{session}/{attempt}/workdir/{path}`. */
async function keepTaskArtifacts(deps: SessionDeps, s: RanSession): Promise<string[]> {
  if (!s.task.artifacts?.length) return [];
  const kept = await keepArtifacts({
    store: deps.store,
    taskId: s.job.task_id,
    sessionId: s.job.session_id,
    attempt: s.attempt,
    homeDir: s.runtime.workDir,
    paths: s.task.artifacts,
    keyPrefix: "workdir/",
    budget: s.artifactBudget,
  }).catch((err) => ({ keys: [], skipped: [`not kept: ${(err as Error).message}`] }));
  for (const why of kept.skipped) deps.log(`session ${s.job.session_id}: task artifact skipped: ${why}`);
  return kept.keys;
}

/** The harness's bounded stdout/stderr as `artifacts/{task}/{session}/{attempt}/harness/std{out,err}.txt`. */
async function keepHarnessOutput(deps: SessionDeps, s: RanSession): Promise<string[]> {
  if (!s.output) return [];
  const prefix = `${keys.artifactsOfAttempt(s.job.task_id, s.job.session_id, s.attempt)}harness/`;
  const kept: string[] = [];
  for (const [name, text] of [
    ["stdout.txt", s.output.stdout],
    ["stderr.txt", s.output.stderr],
  ] as const) {
    try {
      await deps.store.put(prefix + name, text, { contentType: "text/plain; charset=utf-8" });
      kept.push(prefix + name);
    } catch (err) {
      deps.log(`session ${s.job.session_id}: harness ${name} not kept: ${(err as Error).message}`);
    }
  }
  return kept;
}

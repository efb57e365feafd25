import { keys } from "../../shared/keys.ts";
import { isCancelled, watchCancellation } from "./cancellation.ts";
import { OutputCapture } from "./harness-output.ts";
import { runSteps } from "./session-steps.ts";
import type { PreparedSession, RanSession, SessionDeps } from "./session-types.ts";

/**
 * RUNNING: the harness with the proxy URL and session token, stopped at the task's budget
 * (`timeout_seconds`), on cancellation, or on shutdown (`signal`). Never throws for the harness's
 * sake: a crash or timeout is data for POSTRUN.
 */
export async function runSession(
  deps: SessionDeps,
  s: PreparedSession,
  signal: AbortSignal,
): Promise<RanSession> {
  const readyWaitMs = Date.now() - s.preparedAt;
  if (await isCancelled(deps.store, s.task.task_id)) {
    return { ...s, exec: null, cancelled: true, runMs: 0, readyWaitMs };
  }
  await markStarted(deps, s);
  const watch = watchCancellation(deps.store, s.task.task_id, deps.cancelPollMs);
  const started = Date.now();
  const stdout = new OutputCapture();
  const stderr = new OutputCapture();
  try {
    const streams = {
      signal: AbortSignal.any([signal, watch.signal]),
      onStdout: (chunk: string) => stdout.push(chunk),
      onStderr: (chunk: string) => stderr.push(chunk),
    };
    const stepped = s.steps ? await runSteps(deps, { ...s, steps: s.steps }, streams) : null;
    const exec = stepped
      ? stepped.exec
      : await s.runtime.exec(s.invocation.argv, {
          ...streams,
          env: s.invocation.env,
          stdin: s.invocation.stdin,
          timeoutMs: s.budgetMs,
        });
    const steps = stepped ? { stepOutcomes: stepped.outcomes, stepArtifacts: stepped.artifacts } : {};
    // A runtime that does not stream gives its (head-only) buffers instead.
    const output = {
      stdout: stdout.seen ? stdout.text() : (exec?.stdout ?? ""),
      stderr: stderr.seen ? stderr.text() : (exec?.stderr ?? ""),
    };
    return {
      ...s,
      ...steps,
      exec,
      output,
      cancelled: watch.signal.aborted,
      runMs: Date.now() - started,
      readyWaitMs,
    };
  } finally {
    watch.stop();
  }
}

/**
 * `started/{task}/{session}`: what tells a trainer polling the control API that the task is
 * `running`. Only a status hint, so a store that refuses it costs a log line, not the session.
 */
async function markStarted(deps: SessionDeps, s: PreparedSession): Promise<void> {
  const key = keys.started(s.task.task_id, s.job.session_id);
  const body = JSON.stringify({ attempt: s.attempt, started_at: new Date().toISOString() });
  await deps.store
    .put(key, body, { contentType: "application/json" })
    .catch((err) => deps.log(`${s.job.session_id}: writing ${key} failed: ${(err as Error).message}`));
}

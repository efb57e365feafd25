import { mkdir, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { keys } from "../../shared/keys.ts";
import type { ProxyLimits, SessionLimits as ProxySessionLimits } from "../../shared/schemas/proxy-limits.ts";
import { SessionJob } from "../../shared/schemas/task.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { formatIssues } from "../../shared/zod-issues.ts";
import { freshRuntimes } from "../evaluation/fresh-runtime.ts";
import type { PresetContext } from "../harness/preset.ts";
import type { QueueMessage } from "../queue/queue.ts";
import { loadCaptures } from "../reconstruction/load-captures.ts";
import { RUNNER_DEFAULTS } from "../runner-defaults.ts";
import { limitReason } from "../runtime/limits.ts";
import { type Runtime, RuntimeSpecRefused } from "../runtime/runtime.ts";
import { checkServiceEnv } from "../runtime/service-env.ts";
import { checkTaskCeilings } from "../runtime/task-ceilings.ts";
import { isCancelled } from "./cancellation.ts";
import { judgeSpecOf } from "./judge-spec.ts";
import { ArtifactBudget } from "./keep-artifacts.ts";
import { finishTaskIfUnfinished } from "./session-result.ts";
import type { PreparedSession, SessionDeps } from "./session-types.ts";

/** A message that can never run (bad JSON, not a SessionJob): retrying will not help. */
export class PoisonMessageError extends Error {}

/** A failure of the runner's side (runtime, prepare step, install): retried, then dead-lettered. */
export class InitError extends Error {}

/** The task itself cannot run (unknown harness, evaluator or backend, bad settings): not retried. */
export class TaskConfigError extends Error {}

function configured<T>(what: () => T): T {
  try {
    return what();
  } catch (err) {
    throw new TaskConfigError((err as Error).message);
  }
}

/**
 * Normally the delivery count: each delivery is a new attempt. But a resubmitted job starts again
 * at receive count 1 while an earlier message's attempts may have left captures: go past them, so
 * captures of different runs are never mixed.
 */
async function attemptFor(deps: SessionDeps, job: SessionJob, receiveCount: number): Promise<number> {
  const byDelivery = Math.max(0, receiveCount - 1);
  const listed = await deps.store.list(keys.capturesOfSession(job.task_id, job.session_id));
  if (listed.length === 0) return byDelivery;
  const { attempt } = await loadCaptures(deps.store, job.task_id, job.session_id);
  return Math.max(byDelivery, attempt + 1);
}

export function parseJob(msg: QueueMessage): SessionJob {
  let json: unknown;
  try {
    json = JSON.parse(msg.body);
  } catch (err) {
    throw new PoisonMessageError(`message ${msg.messageId}: body is not JSON (${(err as Error).message})`);
  }
  const parsed = SessionJob.safeParse(json);
  if (!parsed.success) {
    throw new PoisonMessageError(`message ${msg.messageId}: not a SessionJob: ${formatIssues(parsed.error)}`);
  }
  return parsed.data;
}

export type InitResult =
  | { kind: "prepared"; value: PreparedSession }
  | { kind: "done" }
  | { kind: "cancelled"; job: SessionJob; attempt: number };

/**
 * INIT: everything before the harness can start, off the run slots' critical path: a fresh runtime,
 * the task's prepare steps, the harness CLI (from the shared cache), its config files, the session token.
 */
export async function initSession(
  deps: SessionDeps,
  msg: QueueMessage,
  signal: AbortSignal,
): Promise<InitResult> {
  const started = Date.now();
  const job = parseJob(msg);
  const task = job.task;
  // At-least-once delivery: a job whose result exists ran; but its runner may have died before the
  // group shard or the completion notice, so finish those if they are missing.
  if ((await deps.store.get(keys.result(job.task_id, job.session_id))) !== null) {
    await finishTaskIfUnfinished(deps, job);
    return { kind: "done" };
  }
  // Each delivery is a new attempt, so a rerun's captures are told apart from a dead runner's.
  const attempt = await attemptFor(deps, job, msg.receiveCount);
  if (await isCancelled(deps.store, job.task_id)) return { kind: "cancelled", job, attempt };

  // Before anything is built: a task over the operator's ceilings is refused whoever submitted it.
  configured(() => checkTaskCeilings(task, deps.taskCeilings));
  // A service's variable this runner may not pass (or does not have) ends the session here, naming it.
  configured(() => checkServiceEnv(task.runtime.services, deps.serviceEnv ?? [], process.env));
  const preset = configured(() => deps.presetFor(task.agent.harness));
  const evaluator = await deps.resolveEvaluator(task.evaluator.strategy).catch((err: Error) => {
    throw new TaskConfigError(err.message);
  });
  const factory = deps.runtimes[task.runtime.backend];
  if (!factory) {
    throw new TaskConfigError(`runtime.backend: no runtime named ${JSON.stringify(task.runtime.backend)}`);
  }
  const budgetMs = task.timeout_seconds * 1000;
  const spec = {
    sessionId: job.session_id,
    image: task.runtime.image,
    env: task.runtime.env,
    limits: task.runtime.limits,
    defaultLimits: deps.sessionLimits,
    proxyUrl: deps.proxyUrl,
    services: task.runtime.services,
    serviceEnv: deps.serviceEnv ?? [],
  };
  // Started now, so an evaluator's runtime is built off the critical path, while the agent runs.
  const fresh = freshRuntimes({
    factory,
    spec: {
      ...spec,
      sessionId: `${job.session_id}.eval`,
      ...judgeSpecOf(task.runtime, job.session_id, deps.allowVerifierNetwork === true),
    },
    prepare: task.runtime.prepare,
    timeoutMs: budgetMs,
    prewarm: evaluator.needsFreshRuntime === true,
  });
  let runtime: Runtime;
  try {
    runtime = await factory.create(spec);
  } catch (err) {
    await fresh.dispose();
    throw err instanceof RuntimeSpecRefused ? new TaskConfigError(err.message) : err;
  }
  try {
    for (const [i, step] of task.runtime.prepare.entries()) {
      const res = await runtime.exec(["sh", "-c", step], { timeoutMs: budgetMs, signal });
      if (signal.aborted) throw signal.reason;
      // The task's own limits are too small for its own setup: a retry would hit them again.
      if (res.limit) {
        throw new TaskConfigError(
          `runtime.prepare[${i}]: ${limitReason(res.limit, { ...deps.sessionLimits, ...task.runtime.limits })}`,
        );
      }
      if (res.exitCode !== 0) {
        throw new InitError(
          `runtime.prepare[${i}] (${JSON.stringify(step)}) ${res.timedOut ? "timed out" : `exited ${res.exitCode}`}: ${tail(res.stderr || res.stdout)}`,
        );
      }
    }
    const binDir = await deps.installHarness(preset);
    const sessionToken = deps.signingKey
      ? await mintSessionToken(
          {
            sessionId: job.session_id,
            taskId: job.task_id,
            attempt,
            sampling: task.agent.sampling,
            tokenInTokenOut: task.agent.token_in_token_out,
            limits: proxyLimitsOf(task.agent.proxy_limits, deps.proxyLimits),
            ttlSeconds: task.timeout_seconds + deps.tokenMarginSeconds,
          },
          deps.signingKey,
        )
      : job.session_id;
    const ctx: PresetContext = {
      agent: task.agent,
      instruction: task.instruction,
      proxyUrl: runtime.proxyUrl,
      sessionToken,
      homeDir: runtime.homeDir,
      workDir: runtime.workDir,
    };
    for (const [path, content] of Object.entries(configured(() => preset.configFiles(ctx)))) {
      const target = isAbsolute(path) ? path : join(runtime.homeDir, path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, content);
    }
    const invocation = configured(() => preset.invocation(ctx, binDir));
    invocation.env = { ...task.runtime.env, ...invocation.env };
    // A stepped task (a multi-step Harbor task) runs the harness once per step, each with its instruction.
    const steps = configured(() => evaluator.steps?.(task.evaluator.config) ?? null)?.map((step) => {
      const inv = configured(() => preset.invocation({ ...ctx, instruction: step.instruction }, binDir));
      return { step, invocation: { ...inv, env: { ...task.runtime.env, ...inv.env } } };
    });
    return {
      kind: "prepared",
      value: {
        msg,
        job,
        task,
        attempt,
        runtime,
        preset,
        evaluator,
        fresh,
        invocation,
        ...(steps ? { steps } : {}),
        budgetMs,
        artifactBudget: new ArtifactBudget(),
        limits: { ...deps.sessionLimits, ...task.runtime.limits },
        initMs: Date.now() - started,
        preparedAt: Date.now(),
      },
    };
  } catch (err) {
    await Promise.allSettled([runtime.stop(), fresh.dispose()]);
    throw err;
  }
}

function tail(s: string): string {
  const t = s.trim();
  return t.length > 500 ? `...${t.slice(-500)}` : t || "(no output)";
}

/** The task's proxy limits over the runner's (a key the task leaves out takes the runner's). */
export function proxyLimitsOf(
  task: ProxyLimits | undefined,
  runner: ProxySessionLimits = {
    maxInFlight: RUNNER_DEFAULTS.proxyMaxInFlight,
    tokensPerMinute: RUNNER_DEFAULTS.proxyTokensPerMinute,
  },
): ProxySessionLimits {
  const maxInFlight = task?.max_in_flight ?? runner.maxInFlight;
  const tokensPerMinute = task?.tokens_per_minute ?? runner.tokensPerMinute;
  return {
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
    ...(tokensPerMinute === undefined ? {} : { tokensPerMinute }),
  };
}

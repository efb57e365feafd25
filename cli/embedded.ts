import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { startRunner } from "../batch-runner/runner.ts";
import { EMBEDDED_RUNNER_DEFAULTS } from "../batch-runner/runner-defaults.ts";
import { submitTasks } from "../batch-runner/submit.ts";
import type { EngineName } from "../shared/engines.ts";
import { openStore } from "../shared/node/open-store.ts";
import type { TaskRequest } from "../shared/schemas/task.ts";
import type { SessionResult } from "../shared/schemas/trajectory.ts";
import { localQueue, startLocalProxy, upstreamOrPolicy } from "./local-stack.ts";
import { makeDir } from "./make-dir.ts";
import { Progress, type ProgressStream } from "./progress.ts";
import { summarizeTask, type TaskSummary } from "./task-summary.ts";
import { checkUpstream } from "./upstream-preflight.ts";

export interface EmbeddedOptions {
  tasks: TaskRequest[];
  /** Default `.polar/run`; the store is `<out>/store`. */
  outDir?: string;
  /** An inference server (vLLM/SGLang); without it the dry-run policy is started. */
  upstream?: string;
  engine?: EngineName;
  run?: number;
  init?: number;
  ready?: number;
  postrun?: number;
  maxReceives?: number;
  metricsPort?: number;
  /** The docker backend's engine binary; unset: picked (batch-runner/runtime/container-engine.ts). */
  dockerBin?: string;
  /** `--allow-verifier-network`: a judge whose task asks for a network gets one. */
  allowVerifierNetwork?: boolean;
  /** `--service-env`: variables of this process's environment side services may take. */
  serviceEnv?: readonly string[];
  /** Aborting stops early: running harnesses are killed, nothing more is started. */
  signal?: AbortSignal;
  /** Where the progress line goes (stderr by default); null for none. */
  progressOut?: ProgressStream | null;
  /** Each session result as it is written (`polar sft` decides acceptance from it). */
  onResult?: (result: SessionResult) => void;
  log?: (line: string) => void;
}

export interface EmbeddedResult {
  /** false when stopped by the signal before every session finished. */
  finished: boolean;
  storeDir: string;
  /** Sessions run by this call (those already with a result are not rerun). */
  sessions: number;
  statuses: Record<string, number>;
  /** Per task, read back from the store: sessions by status, mean reward, ERROR reasons, shard. */
  tasks: TaskSummary[];
}

/** The run cannot start (output directory, upstream): the message says why; nothing was run. */
export class RunSetupError extends Error {}

/**
 * `polar run`: the proxy, the runner, an in-memory queue and a directory store in one process,
 * with the dry-run policy when no upstream is given. Token auth is on, with a random signing key.
 */
export async function runEmbedded(opts: EmbeddedOptions): Promise<EmbeddedResult> {
  const outDir = resolve(opts.outDir ?? ".polar/run");
  const storeDir = join(outDir, "store");
  // Checked first, so a run that cannot reach its upstream creates nothing.
  if (opts.upstream) {
    await checkUpstream(opts.upstream).catch((err: Error) => {
      throw new RunSetupError(err.message);
    });
  }
  await makeDir(storeDir).catch((err: Error) => {
    throw new RunSetupError(`--out: ${err.message}`);
  });
  const store = openStore(storeDir);
  const log = opts.log ?? ((line: string) => console.error(line));
  const signingKey = randomBytes(32).toString("hex");

  const maxReceives = opts.maxReceives ?? EMBEDDED_RUNNER_DEFAULTS.maxReceives;
  const queue = localQueue(maxReceives);
  const submitted = await submitTasks(store, queue, opts.tasks);
  const total = submitted.enqueued;
  if (submitted.skipped)
    log(`${submitted.skipped} session(s) already have a result in ${storeDir}; not rerun`);
  const statuses: Record<string, number> = {};
  const summaries = async () => {
    const out: TaskSummary[] = [];
    for (const task of opts.tasks) out.push(await summarizeTask(store, task));
    return out;
  };
  if (total === 0) return { finished: true, storeDir, sessions: 0, statuses, tasks: await summaries() };

  const closers: Array<() => Promise<void>> = [];
  try {
    const upstream = await upstreamOrPolicy(opts.upstream, closers, log);
    const proxy = await startLocalProxy({ upstream, engine: opts.engine, store, signingKey }, closers, log);
    log(`proxy at ${proxy.url} -> ${upstream}; store ${store.url}`);

    const progress = opts.progressOut === null ? null : new Progress(total, opts.progressOut);
    const runner = await startRunner({
      queue,
      store,
      proxyUrl: proxy.url,
      signingKey,
      run: opts.run,
      init: opts.init,
      ready: opts.ready,
      postrun: opts.postrun,
      maxReceives,
      waitSeconds: EMBEDDED_RUNNER_DEFAULTS.waitSeconds,
      metricsPort: opts.metricsPort,
      // A laptop run of one's own tasks: without bwrap, sessions fall back to `process` (with a
      // warning); evaluator modules load from the current directory (never the store or sessions).
      allowUnsandboxed: true,
      allowVerifierNetwork: opts.allowVerifierNetwork,
      serviceEnv: opts.serviceEnv,
      evaluatorDirs: [process.cwd()],
      filesDirs: [process.cwd()],
      runtimeOptions: { bwrapImageDirs: [process.cwd()], bins: { docker: opts.dockerBin } },
      log: (line) => log(`[runner] ${line}`),
      onResult: (r) => {
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        progress?.record(r);
        opts.onResult?.(r);
      },
    });
    closers.unshift(() => runner.stop(0));
    // Done when nothing is queued or in flight (dead-lettered jobs are recorded as ERROR results).
    while ((queue.size() > 0 || runner.pipeline.stats().inFlight > 0) && !opts.signal?.aborted)
      await sleep(100);
    progress?.finish();
  } finally {
    for (const close of closers) await close().catch((err) => log(`shutdown: ${(err as Error).message}`));
  }
  return { finished: !opts.signal?.aborted, storeDir, sessions: total, statuses, tasks: await summaries() };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

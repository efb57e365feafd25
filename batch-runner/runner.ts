import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { keys } from "../shared/keys.ts";
import type { SessionLimits as ProxySessionLimits } from "../shared/schemas/proxy-limits.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { resolveEvaluator } from "./evaluation/registry.ts";
import { defaultCacheDir, installHarness } from "./harness/install.ts";
import { pythonRuntimeDirs } from "./harness/install-python.ts";
import { harnessPresets, presetFor } from "./harness/registry.ts";
import { RunnerMetrics } from "./metrics.ts";
import { sendCompletionNotice } from "./pipeline/completion-notice.ts";
import { sessionStages } from "./pipeline/session-stages.ts";
import type { PreparedSession, RanSession, SessionDeps } from "./pipeline/session-types.ts";
import { StagedPipeline } from "./pipeline/staged-pipeline.ts";
import type { Queue } from "./queue/queue.ts";
import { reconstructSession } from "./reconstruction/build-session.ts";
import { defaultSessionLimits, postrunSlots, RUNNER_DEFAULTS } from "./runner-defaults.ts";
import { hostLimitSupport } from "./runtime/host-limits.ts";
import type { SessionLimits } from "./runtime/limits.ts";
import { nodeResources } from "./runtime/node-resources.ts";
import { type RuntimeFactoryOptions, runtimeFactories } from "./runtime/open-runtime.ts";
import type { RuntimeFactory } from "./runtime/runtime.ts";
import { sandboxedRuntimes } from "./runtime/sandbox-policy.ts";
import type { TaskCeilings } from "./runtime/task-ceilings.ts";
import { defaultSessionsRoot, reapOrphanedSessions } from "./runtime/work-dirs.ts";
import { writeGroupShard } from "./shards/write-group-shard.ts";

export interface RunnerOptions {
  queue: Queue;
  store: ObjectStore;
  proxyUrl: string;
  /** null when the proxy accepts any key (`--auth off`). */
  signingKey: string | null;
  init?: number;
  ready?: number;
  run?: number;
  postrun?: number;
  /** Visibility of a received message; the heartbeat extends it every third of this. Default 120 s. */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait per receive (SQS max 20). Default 10 s. */
  waitSeconds?: number;
  maxReceives?: number;
  deadLetter?: Queue;
  resultsQueue?: Queue;
  /** Serve Prometheus metrics on this port (0 = ephemeral); omit for none. */
  metricsPort?: number;
  metricsHost?: string;
  sessionsRoot?: string;
  harnessCacheDir?: string;
  runtimes?: Record<string, RuntimeFactory>;
  /** Engine binaries and apptainer mode for the default runtime factories. */
  runtimeOptions?: Omit<RuntimeFactoryOptions, "sessionsRoot">;
  cancelPollMs?: number;
  /**
   * Limits of a session whose task names none (each key separately); default: derived from the node
   * (`defaultSessionLimits`: memory, pids, output; no disk).
   */
  sessionLimits?: SessionLimits;
  /**
   * What the proxy lets a session take where its task's `agent.proxy_limits` names none (a key left
   * out: no limit); default `RUNNER_DEFAULTS.proxyMaxInFlight` and `proxyTokensPerMinute`.
   */
  proxyLimits?: ProxySessionLimits;
  /**
   * The most a task may ask for in `runtime.limits`, `agent.proxy_limits` and `timeout_seconds`
   * (`--max-task-limits`): a task over one ends ERROR at INIT naming it. None by default.
   */
  taskCeilings?: TaskCeilings;
  /**
   * `--allow-verifier-network`: an evaluator's fresh runtime gets the engine's network when its task
   * asks (`runtime.judge_network`, a Harbor task's verifier phase). The agent's never has one. Off by default.
   */
  allowVerifierNetwork?: boolean;
  /**
   * `--service-env NAME,...`: the variables of the runner's environment a task's side services may
   * take (a Harbor compose file's `- NAME`, `${NAME}`). A service taking one not listed ends its
   * session ERROR at INIT naming it; the agent never gets them. None by default.
   */
  serviceEnv?: readonly string[];
  /**
   * Lets tasks run in the `process` runtime (on the host, as the runner's user), and lets the runner
   * start without a working bwrap (the default runtime then falls back to `process`). Off by default.
   */
  allowUnsandboxed?: boolean;
  /** Directories evaluator modules may be loaded from (`--evaluator-dir`); none by default. */
  evaluatorDirs?: string[];
  /** Directories `evaluator.config.files[...].from` may read (`--files-dir`); none by default. */
  filesDirs?: string[];
  /** Hosts a callback_url may reach over http or on an internal address (`--callback-allow-host`). */
  callbackAllowHosts?: string[];
  log?: (line: string) => void;
  onResult?: SessionDeps["onResult"];
}

export interface Runner {
  pipeline: StagedPipeline<PreparedSession, RanSession>;
  metrics: RunnerMetrics;
  metricsUrl: string | null;
  /** Graceful shutdown (see StagedPipeline.stop), then closes the metrics server. */
  stop(graceMs: number): Promise<void>;
}

/** A batch runner: the session pipeline wired to the real runtimes, presets, reconstruction and shards. */
export async function startRunner(opts: RunnerOptions): Promise<Runner> {
  const log = opts.log ?? ((line: string) => console.error(`[runner] ${line}`));
  const run = opts.run ?? RUNNER_DEFAULTS.run;
  // Harness CLIs are installed once per machine; sandboxes see the cache read-only.
  const harnessCache = opts.harnessCacheDir ?? defaultCacheDir();
  await mkdir(harnessCache, { recursive: true });
  const sessionsRoot = resolve(opts.sessionsRoot ?? defaultSessionsRoot());
  // What no task or agent may load code or files from, whatever the allowlists say.
  const denied = [
    sessionsRoot,
    ...(opts.store.url.startsWith("file:") ? [fileURLToPath(opts.store.url)] : []),
  ];
  const modules = { allowed: opts.evaluatorDirs ?? [], denied };
  const sessionLimits = opts.sessionLimits ?? defaultSessionLimits(run, nodeResources());
  logSessionLimits(sessionLimits, log);
  const hostFiles = { allowed: opts.filesDirs ?? [], denied };
  const deps: SessionDeps = {
    store: opts.store,
    sessionLimits,
    proxyLimits: opts.proxyLimits,
    taskCeilings: opts.taskCeilings,
    allowVerifierNetwork: opts.allowVerifierNetwork,
    serviceEnv: opts.serviceEnv,
    runtimes:
      opts.runtimes ??
      sandboxedRuntimes(
        runtimeFactories({
          ...opts.runtimeOptions,
          sessionsRoot,
          // The Python presets' venvs link to their base interpreters outside the cache.
          readOnlyBinds: [
            harnessCache,
            ...pythonRuntimeDirs(Object.values(harnessPresets).filter((p) => p.pipPackages)),
            ...(opts.runtimeOptions?.readOnlyBinds ?? []),
          ],
          hiddenPaths: denied,
        }),
        opts.allowUnsandboxed === true,
        opts.runtimeOptions?.bins?.bwrap,
        log,
      ),
    proxyUrl: opts.proxyUrl.replace(/\/+$/, ""),
    signingKey: opts.signingKey,
    presetFor,
    resolveEvaluator: (strategy) => resolveEvaluator(strategy, modules),
    hostFiles,
    installHarness: async (preset) =>
      (await installHarness(preset, { cacheDir: harnessCache, log }))?.binDir ?? null,
    reconstruct: async ({ store, task, sessionId, attempt, status }) =>
      (await reconstructSession({ store, task, sessionId, attempt, status })).trajectory,
    writeShard: ({ store, task }) => writeGroupShard({ store, task }),
    onTaskComplete: async (task, shard) => {
      const shardKey = shard.key ?? shard.jsonlKey;
      log(
        `task ${task.task_id}: all ${shard.sessions} sessions done, shard ${shardKey} (${shard.rows} rows)`,
      );
      const notice = {
        type: "task_completed" as const,
        task_id: task.task_id,
        sessions: shard.sessions,
        rows: shard.rows,
        shard_key: shardKey,
        // A directory store's URL is a path on this host: not for a callback's body.
        shard_url: opts.store.url.startsWith("file:")
          ? null
          : `${opts.store.url.replace(/\/+$/, "")}/${shardKey}`,
        finished_at: new Date().toISOString(),
      };
      const errors = await sendCompletionNotice(notice, {
        resultsQueue: opts.resultsQueue,
        callbackUrl: task.callback_url,
        callbackAllowHosts: opts.callbackAllowHosts,
      });
      for (const e of errors) log(`task ${task.task_id}: completion notice: ${e}`);
      // A refused callback will never go through; anything else is retried by a redelivery.
      if (errors.every((e) => e.startsWith("callback refused"))) {
        await opts.store.put(keys.notice(task.task_id), JSON.stringify({ ...notice, errors }), {
          contentType: "application/json",
        });
      }
    },
    maxReceives: opts.maxReceives ?? RUNNER_DEFAULTS.maxReceives,
    deadLetter: opts.deadLetter,
    cancelPollMs: opts.cancelPollMs ?? RUNNER_DEFAULTS.cancelPollMs,
    tokenMarginSeconds: 900,
    log,
    onResult: opts.onResult,
  };
  const reaped = await reapOrphanedSessions(sessionsRoot);
  if (reaped > 0) log(`reaped ${reaped} session(s) left behind by a runner that died`);
  let metrics: RunnerMetrics | null = null;
  const pipeline: StagedPipeline<PreparedSession, RanSession> = new StagedPipeline(
    opts.queue,
    sessionStages(deps),
    {
      init: opts.init ?? run,
      ready: opts.ready ?? run,
      run,
      postrun: opts.postrun ?? postrunSlots(run),
      visibilityTimeoutSeconds: opts.visibilityTimeoutSeconds ?? RUNNER_DEFAULTS.visibilityTimeoutSeconds,
      waitSeconds: opts.waitSeconds ?? RUNNER_DEFAULTS.waitSeconds,
      onError: (err, where) => log(`${where}: ${err instanceof Error ? err.message : String(err)}`),
      onStage: (stage, ms) => metrics?.observeStage(stage, ms),
      onSettled: (outcome) => metrics?.countSettled(outcome),
    },
  );
  metrics = new RunnerMetrics(() => pipeline.stats());
  const server =
    opts.metricsPort !== undefined
      ? await metrics.serve(opts.metricsPort, opts.metricsHost ?? "127.0.0.1")
      : null;
  pipeline.start();
  return {
    pipeline,
    metrics,
    metricsUrl: server?.url ?? null,
    async stop(graceMs: number) {
      await pipeline.stop(graceMs);
      await server?.close();
    },
  };
}

/** Says which default limits hold in bwrap here, and which this node cannot enforce (so they do not). */
function logSessionLimits(limits: SessionLimits, log: (line: string) => void): void {
  const support = hostLimitSupport("bwrap");
  const held: string[] = [];
  for (const [name, value] of Object.entries(limits)) {
    if (value === undefined) continue;
    const why = support[name as keyof typeof support];
    if (why === true) held.push(`${name} ${value}`);
    else log(`WARNING: default ${name} ${value} is not enforced in bwrap on this node: ${why}`);
  }
  log(`per-session limits unless a task sets its own: ${held.join(", ") || "none"}`);
}

import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import type { Hono } from "hono";
import { startRunner } from "../batch-runner/runner.ts";
import { RUNNER_DEFAULTS } from "../batch-runner/runner-defaults.ts";
import type { TaskCeilings } from "../batch-runner/runtime/task-ceilings.ts";
import type { NodeProxyOptions } from "../proxy-worker/node.ts";
import type { ReplicaAddressKind } from "../proxy-worker/routing/replica-address.ts";
import type { EngineName } from "../shared/engines.ts";
import { keys } from "../shared/keys.ts";
import { openStore } from "../shared/node/open-store.ts";
import type { LogprobsMode } from "../shared/schemas/capture.ts";
import type { SessionResult } from "../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { startLocalDownloads } from "./local-downloads.ts";
import { localQueue, startLocalProxy, upstreamOrPolicy } from "./local-stack.ts";
import { makeDir } from "./make-dir.ts";
import { checkUpstream } from "./upstream-preflight.ts";

export interface LocalControlOptions {
  /** An inference server; without it the dry-run policy is started. */
  upstream?: string;
  engine?: EngineName;
  /** What the engine's logprobs mean (`--logprobs-mode`); the engine's default when absent. */
  logprobsMode?: LogprobsMode;
  /** Default `.polar/serve`; the store is `<out>/store`. */
  outDir?: string;
  host?: string;
  /** The proxy's port (default 8787; 0 picks a free one). */
  port?: number;
  /** The control API's credential; random when not given (printed by `polar serve`). */
  controlToken?: string;
  run?: number;
  maxReceives?: number;
  logRequests?: boolean;
  /** Sessions may run unsandboxed (no working bwrap, or runtime.backend process). */
  allowUnsandboxed?: boolean;
  /** `--max-task-limits`: what a submitted task may ask for at most. */
  taskCeilings?: TaskCeilings;
  /** The proxy's request limits (`polar serve`'s image flags); absent ones take the proxy's defaults. */
  proxyLimits?: NodeProxyOptions["limits"];
  /** `--allow-verifier-network`: a judge whose task asks for a network gets one. */
  allowVerifierNetwork?: boolean;
  /** `--service-env`: variables of this process's environment side services may take. */
  serviceEnv?: readonly string[];
  /** Where `/v1/replicas` may add engines beyond public addresses; default loopback (engines on this host). */
  replicaAddresses?: ReplicaAddressKind[];
  log?: (line: string) => void;
  onResult?: (result: SessionResult) => void;
  /**
   * Routes mounted beside the control API, given the store and the control token (`polar serve`
   * hands in the viewer at `/viewer`); the stack itself knows nothing of what reads its store.
   */
  routes?: (store: ObjectStore, controlToken: string) => Promise<(app: Hono) => void>;
}

export interface LocalControl {
  /** The proxy: provider endpoints and the control API (`/v1/tasks`). */
  url: string;
  controlToken: string;
  storeDir: string;
  close(): Promise<void>;
}

/**
 * `polar serve`: the control API with nothing to set up. The proxy with `/v1/tasks` on, an
 * in-memory queue, a directory store, a runner in this process consuming that queue, and signed
 * local download URLs for the shards, so a trainer's HTTP client (examples/trainer-submit.ts)
 * works against one command. The queue lives as long as the process: for a fleet, use SQS.
 */
export async function startLocalControl(opts: LocalControlOptions = {}): Promise<LocalControl> {
  const log = opts.log ?? ((line: string) => console.error(line));
  if (opts.upstream) await checkUpstream(opts.upstream);
  const storeDir = join(resolve(opts.outDir ?? ".polar/serve"), "store");
  await makeDir(storeDir);
  const store = openStore(storeDir);
  // One process: a trainer's replicas and version last as long as it does (docs/control-api.md
  // "Where this state lives"); a fleet's `polar proxy` keeps them across restarts instead.
  await forgetRuntimeState(store);
  const signingKey = randomBytes(32).toString("hex");
  const controlToken = opts.controlToken ?? randomBytes(16).toString("hex");
  const maxReceives = opts.maxReceives ?? RUNNER_DEFAULTS.maxReceives;
  const queue = localQueue(maxReceives);
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const c of closers) await c().catch((err) => log(`shutdown: ${(err as Error).message}`));
  };
  try {
    const upstream = await upstreamOrPolicy(opts.upstream, closers, log);
    const downloads = await startLocalDownloads(store);
    closers.unshift(() => downloads.close());
    const proxy = await startLocalProxy({ upstream, engine: opts.engine, store, signingKey }, closers, log, {
      host: opts.host ?? "127.0.0.1",
      port: opts.port ?? 8787,
      logRequests: opts.logRequests,
      ...(opts.logprobsMode ? { logprobsMode: opts.logprobsMode } : {}),
      ...(opts.proxyLimits ? { limits: opts.proxyLimits } : {}),
      control: {
        jobs: queue,
        controlToken,
        presignGet: downloads.presignGet,
        replicaAddresses: { allow: opts.replicaAddresses ?? ["loopback"] },
      },
      extraRoutes: await opts.routes?.(store, controlToken),
    });
    const runner = await startRunner({
      queue,
      store,
      proxyUrl: proxy.url,
      signingKey,
      run: opts.run,
      maxReceives,
      waitSeconds: 1,
      allowUnsandboxed: opts.allowUnsandboxed,
      taskCeilings: opts.taskCeilings,
      allowVerifierNetwork: opts.allowVerifierNetwork,
      serviceEnv: opts.serviceEnv,
      log: (line) => log(`[runner] ${line}`),
      onResult: (r) => {
        const why = r.status === "ERROR" && r.error ? `: ${r.error.split("\n", 1)[0]}` : "";
        log(`session ${r.session_id}: ${r.status}${r.reward === null ? "" : `, reward ${r.reward}`}${why}`);
        opts.onResult?.(r);
      },
    });
    closers.unshift(() => runner.stop(0));
    return { url: proxy.url, controlToken, storeDir, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A new `polar serve` starts from its flags, as before the state moved to the store. */
async function forgetRuntimeState(store: ObjectStore): Promise<void> {
  await Promise.all([store.delete(keys.runtimeReplicas()), store.delete(keys.runtimePolicyVersion())]);
}

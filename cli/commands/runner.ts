import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { openQueue } from "../../batch-runner/queue/open-queue.ts";
import { startRunner } from "../../batch-runner/runner.ts";
import { defaultSessionLimits, postrunSlots, RUNNER_DEFAULTS } from "../../batch-runner/runner-defaults.ts";
import type { SessionLimits } from "../../batch-runner/runtime/limits.ts";
import { nodeResources } from "../../batch-runner/runtime/node-resources.ts";
import { defaultSessionsRoot } from "../../batch-runner/runtime/work-dirs.ts";
import type { SessionLimits as ProxySessionLimits } from "../../shared/schemas/proxy-limits.ts";
import { type Command, UsageError } from "../command.ts";
import {
  intFlag,
  numberFlag,
  parseFlags,
  queueFlag,
  serviceEnvFlag,
  storeFlag,
  taskCeilingsFlag,
  weakSigningKeyWarning,
} from "../flags.ts";

/** The defaults on this node for the default --run, shown in --help (the runner derives them for its own --run). */
const shown = defaultSessionLimits(RUNNER_DEFAULTS.run, nodeResources(existingDir(defaultSessionsRoot())));

const usage = `Usage: polar runner --queue memory|SQS_URL --store DIR|s3://bucket/prefix --proxy-url URL
                    [--init N] [--run N] [--postrun N] [--ready N]
                    [--dlq-url URL] [--max-receives N] [--results-queue URL]
                    [--metrics-port P] [--visibility-timeout S] [--wait-seconds S] [--grace-seconds S]
                    [--sessions-dir DIR] [--harness-cache DIR]
                    [--docker-bin docker|podman] [--apptainer-bin apptainer|singularity]
                    [--apptainer-mode exec|instance] [--allow-unsandboxed]
                    [--evaluator-dir DIR]... [--files-dir DIR]... [--callback-allow-host HOST]...
                    [--bwrap-image-dir DIR]...
                    [--session-memory-mb N] [--session-pids N] [--session-disk-mb N] [--session-output-mb N]
                    [--session-max-in-flight N] [--session-tokens-per-minute N]
                    [--max-task-limits NAME=N,...] [--allow-verifier-network]
                    [--service-env NAME[,NAME...]]

A batch runner: receives SessionJobs, runs each session through INIT -> READY -> RUNNING -> POSTRUN
and writes results/{task}/{session}.json and the task's group shard when its last session lands.

  --queue Q            where SessionJobs come from: an SQS queue URL, or "memory" (an empty
                       in-process queue: only useful inside tests; \`polar run\` or \`polar serve\`
                       run a memory queue together with what fills it)
  --store S            where tasks/, captures/, results/ and trajectories/ live: a directory,
                       file:///abs/dir or s3://bucket/prefix (the proxy's store)
  --proxy-url URL      the proxy as this host reaches it; harnesses get it as their base URL
  --run N              concurrent harness runs (default ${RUNNER_DEFAULTS.run})
  --init N             sessions being prepared at once: runtime, prepare steps, install (default: --run)
  --ready N            prepared sessions waiting for a run slot (default: --run)
  --postrun N          sessions being reconstructed and evaluated at once (default: half of --run)
  --max-receives N     deliveries before a failing job is recorded as ERROR and dead-lettered (${RUNNER_DEFAULTS.maxReceives})
  --dlq-url URL        dead-letter client-side (for SQS servers without RedrivePolicy)
  --results-queue URL  gets a completion notice (JSON) when a task's last session is terminal
  --metrics-port P     Prometheus metrics on http://127.0.0.1:P/metrics
  --visibility-timeout S  message visibility, kept alive by a heartbeat (default ${RUNNER_DEFAULTS.visibilityTimeoutSeconds})
  --wait-seconds S     long-poll wait per receive, 0..20 (default ${RUNNER_DEFAULTS.waitSeconds})
  --sessions-dir DIR   where per-session work and home dirs are made
                       (default $TMPDIR/polar-sessions, or POLAR_SESSIONS_DIR)
  --harness-cache DIR  where harness CLIs are npm-installed once per machine
                       (default ~/.cache/polar-harnesses, or POLAR_HARNESS_CACHE)
  --grace-seconds S    on SIGTERM: running sessions get this long to finish (default ${RUNNER_DEFAULTS.graceSeconds}); the
                       rest go back to the queue
  --docker-bin, --apptainer-bin, --apptainer-mode
                       container engines for tasks with runtime.backend docker / apptainer
                       (docker default: docker when its daemon answers, else podman when it
                       runs; podman gets the flags this host needs, docs/runner.md "Runtimes")
  --allow-unsandboxed  allow runtime.backend process (sessions on this host, as this user) and
                       start without a working bwrap (the default runtime then falls back to
                       process); without it the runner refuses to start when bwrap cannot sandbox
  --evaluator-dir DIR  evaluator.strategy module paths load only from these dirs (repeatable;
                       never from the store or the sessions dir); none by default
  --files-dir DIR      evaluator.config.files[...].from host paths only under these (repeatable)
  --callback-allow-host HOST
                       callback_url may use http and reach an internal address for this host
                       (repeatable); otherwise https to a public address only
  --bwrap-image-dir DIR
                       a bwrap task's runtime.image (a root directory) must lie under one of
                       these (repeatable); none by default
  --session-memory-mb N, --session-pids N, --session-disk-mb N, --session-output-mb N
                       limits of a session whose task sets no runtime.limits of that name; 0 = none.
                       Defaults derive from the node and --run; here, with --run ${RUNNER_DEFAULTS.run}:
                       memory ${shown.memory_mb} MiB (80% of RAM / run slots, at least 1024), pids ${shown.pids}
                       (threads-max / 4 / run slots, at most 4096), disk ${shown.disk_mb ?? "none"} MiB (half the free
                       space of --sessions-dir / run slots, at most 20 GiB), output ${shown.output_mb} MiB.
                       bwrap enforces them with a cgroup per session and a loop-mounted ext4 work dir
                       (root, or a delegated cgroup v2 group); a default this node cannot enforce is
                       logged at start; a task asking for a limit its runtime cannot enforce ends
                       ERROR at INIT. A hit ends the session ERROR with limit:memory, limit:pids,
                       limit:disk or limit:output (docs/security.md, "Resource limits")
  --session-max-in-flight N, --session-tokens-per-minute N
                       what the proxy lets a session take where its task's agent.proxy_limits names
                       none, minted into the session token: model calls in progress at once (default
                       ${RUNNER_DEFAULTS.proxyMaxInFlight}) and prompt + completion tokens per minute (default ${RUNNER_DEFAULTS.proxyTokensPerMinute}); 0 = no
                       limit. Past either, the harness gets its provider's 429 with retry-after
                       (docs/security.md, "Fair share at the proxy")
  --max-task-limits NAME=N,...
                       the most a task may ask for, whoever submitted it (a control-API token
                       holder, a plug-in's dataset row, a NeMo Gym row): NAME is one of memory_mb,
                       pids, disk_mb, output_mb, cpus, gpus, max_in_flight, tokens_per_minute,
                       timeout_seconds, steps (a multi-step task's; at most 32 without a ceiling);
                       a task over one ends ERROR at INIT naming it. None by default
  --allow-verifier-network
                       an evaluator's fresh runtime (a Harbor task's verifier) gets the container
                       engine's network when its task asks for one (runtime.judge_network); the
                       agent's runtime never has one. Off by default (docker backend only)
  --service-env NAME[,NAME...]
                       variables of this runner's environment a task's side services may take (a
                       Harbor compose file's \`- NAME\`, \`\${NAME}\`): passed to that service only,
                       never to the agent; a service taking a name not listed, or listed but unset,
                       ends its session ERROR at INIT naming it. None by default (repeatable)

Environment: POLAR_SIGNING_KEY (the proxy's key; unset = the proxy runs with --auth off),
AWS_* and AWS_ENDPOINT_URL_SQS for SQS, AWS_ENDPOINT_URL_S3 for s3:// stores; none of it reaches a
session. See docs/runner.md and docs/security.md.`;

type MultiFlag = "evaluator-dir" | "files-dir" | "callback-allow-host" | "bwrap-image-dir" | "service-env";
type RunnerFlagValues = { [k: string]: string | undefined } & { [k in MultiFlag]?: string[] } & {
  "allow-unsandboxed"?: boolean;
  "allow-verifier-network"?: boolean;
};

const command: Command = {
  summary: "a batch runner (queue -> INIT/READY/RUNNING/POSTRUN -> results and shards)",
  usage,
  async run(argv) {
    const { values } = parseFlags({
      args: argv,
      options: {
        ...Object.fromEntries(
          [
            "queue",
            "store",
            "proxy-url",
            "init",
            "run",
            "postrun",
            "ready",
            "dlq-url",
            "max-receives",
            "results-queue",
            "metrics-port",
            "visibility-timeout",
            "wait-seconds",
            "grace-seconds",
            "sessions-dir",
            "harness-cache",
            "docker-bin",
            "apptainer-bin",
            "apptainer-mode",
            "session-memory-mb",
            "session-pids",
            "session-disk-mb",
            "session-output-mb",
            "session-max-in-flight",
            "session-tokens-per-minute",
            "max-task-limits",
          ].map((k) => [k, { type: "string" as const }]),
        ),
        "allow-unsandboxed": { type: "boolean" },
        "allow-verifier-network": { type: "boolean" },
        "evaluator-dir": { type: "string", multiple: true },
        "files-dir": { type: "string", multiple: true },
        "callback-allow-host": { type: "string", multiple: true },
        "bwrap-image-dir": { type: "string", multiple: true },
        "service-env": { type: "string", multiple: true },
      },
      strict: true,
      allowPositionals: false,
    }) as unknown as { values: RunnerFlagValues };
    const queueSpec = queueFlag("queue", values.queue, true) as string;
    if (!values.store) throw new UsageError("--store is required (a directory or s3://bucket/prefix)");
    const proxyUrl = values["proxy-url"];
    if (!proxyUrl || !/^https?:\/\/[^/]/.test(proxyUrl)) {
      throw new UsageError(`--proxy-url must be the proxy's http(s) URL, got ${JSON.stringify(proxyUrl)}`);
    }
    const run = intFlag("run", values.run, RUNNER_DEFAULTS.run, 1, 4096);
    const sessionLimits = sessionLimitFlags(values, run);
    const proxyLimits = proxyLimitFlags(values);
    const maxReceives = intFlag("max-receives", values["max-receives"], RUNNER_DEFAULTS.maxReceives, 1, 1000);
    const dlqSpec = queueFlag("dlq-url", values["dlq-url"], false);
    const resultsSpec = queueFlag("results-queue", values["results-queue"], false);
    const graceMs =
      numberFlag("grace-seconds", values["grace-seconds"], RUNNER_DEFAULTS.graceSeconds, 0, 86_400) * 1000;
    const apptainerMode = values["apptainer-mode"];
    if (apptainerMode !== undefined && apptainerMode !== "exec" && apptainerMode !== "instance") {
      throw new UsageError(`--apptainer-mode must be exec or instance, got ${JSON.stringify(apptainerMode)}`);
    }
    const signingKey = process.env.POLAR_SIGNING_KEY || null;
    const weak = weakSigningKeyWarning(signingKey);
    if (weak) console.error(`polar runner: ${weak}`);
    if (queueSpec === "memory")
      console.error(
        "polar runner: warning: --queue memory starts empty and nothing else can reach it, so this runner will idle; use `polar run TASKS.jsonl` (or `polar serve`) to run tasks in one process, or an SQS queue URL",
      );
    if (!signingKey)
      console.error(
        "polar runner: POLAR_SIGNING_KEY is unset: sessions use their id as key (proxy --auth off)",
      );

    const store = await storeFlag(values.store);
    const deadLetter = dlqSpec
      ? openQueue(dlqSpec)
      : queueSpec === "memory"
        ? new MemoryQueue({ url: "memory://dlq" })
        : undefined;
    const queue = openQueue(queueSpec, { maxReceiveCount: maxReceives, deadLetter });
    const resultsQueue = resultsSpec ? openQueue(resultsSpec) : undefined;
    const runner = await startRunner({
      queue,
      store,
      proxyUrl,
      signingKey,
      run,
      init: intFlag("init", values.init, run, 1, 4096),
      ready: intFlag("ready", values.ready, run, 0, 4096),
      postrun: intFlag("postrun", values.postrun, postrunSlots(run), 1, 4096),
      maxReceives,
      deadLetter: dlqSpec ? deadLetter : undefined,
      resultsQueue,
      metricsPort:
        values["metrics-port"] === undefined
          ? undefined
          : intFlag("metrics-port", values["metrics-port"], 0, 0, 65535),
      visibilityTimeoutSeconds: intFlag(
        "visibility-timeout",
        values["visibility-timeout"],
        RUNNER_DEFAULTS.visibilityTimeoutSeconds,
        1,
        43_200,
      ),
      waitSeconds: intFlag("wait-seconds", values["wait-seconds"], RUNNER_DEFAULTS.waitSeconds, 0, 20),
      sessionsRoot: values["sessions-dir"],
      sessionLimits,
      proxyLimits,
      taskCeilings: taskCeilingsFlag(values["max-task-limits"]),
      harnessCacheDir: values["harness-cache"],
      allowUnsandboxed: values["allow-unsandboxed"] === true,
      allowVerifierNetwork: values["allow-verifier-network"] === true,
      serviceEnv: serviceEnvFlag(values["service-env"]),
      evaluatorDirs: values["evaluator-dir"],
      filesDirs: values["files-dir"],
      callbackAllowHosts: values["callback-allow-host"],
      runtimeOptions: {
        bins: { docker: values["docker-bin"], apptainer: values["apptainer-bin"] },
        apptainerMode,
        bwrapImageDirs: values["bwrap-image-dir"],
      },
    });
    console.error(
      `polar runner: ${queue.url} -> ${store.url}; proxy ${proxyUrl}; run slots ${run}` +
        (runner.metricsUrl ? `; metrics ${runner.metricsUrl}` : ""),
    );
    await new Promise<void>((resolve) => {
      let stopping = false;
      const onSignal = (sig: string) => {
        if (stopping) {
          console.error(`polar runner: ${sig} again, exiting now`);
          process.exit(130);
        }
        stopping = true;
        console.error(
          `polar runner: ${sig}: finishing running sessions (up to ${graceMs / 1000}s), returning the rest`,
        );
        runner.stop(graceMs).then(resolve, (err) => {
          console.error(`polar runner: shutdown: ${(err as Error).message}`);
          resolve();
        });
      };
      process.on("SIGTERM", () => onSignal("SIGTERM"));
      process.on("SIGINT", () => onSignal("SIGINT"));
    });
    await Promise.allSettled([queue.close(), deadLetter?.close(), resultsQueue?.close()]);
    console.error("polar runner: stopped");
    return 0;
  },
};

export default command;

function existingDir(dir: string): string {
  let d = dir;
  while (!existsSync(d)) d = dirname(d);
  return d;
}

/** The --session-* flags over the node's defaults for this --run; 0 drops a default. */
function sessionLimitFlags(values: RunnerFlagValues, run: number): SessionLimits {
  const sessionsDir = existingDir(values["sessions-dir"] ?? defaultSessionsRoot());
  const node = defaultSessionLimits(run, nodeResources(sessionsDir));
  const flag = (name: string, fallback: number | undefined): number | undefined => {
    const n = intFlag(name, values[name], fallback ?? 0, 0, 1 << 30);
    return n === 0 ? undefined : n;
  };
  return {
    memory_mb: flag("session-memory-mb", node.memory_mb),
    pids: flag("session-pids", node.pids),
    disk_mb: flag("session-disk-mb", node.disk_mb),
    output_mb: flag("session-output-mb", node.output_mb),
  };
}

/** The proxy's per-session limits over RUNNER_DEFAULTS; 0 drops one. */
function proxyLimitFlags(values: RunnerFlagValues): ProxySessionLimits {
  const inFlight = intFlag(
    "session-max-in-flight",
    values["session-max-in-flight"],
    RUNNER_DEFAULTS.proxyMaxInFlight,
    0,
    4096,
  );
  const tpm = intFlag(
    "session-tokens-per-minute",
    values["session-tokens-per-minute"],
    RUNNER_DEFAULTS.proxyTokensPerMinute,
    0,
    10_000_000_000,
  );
  return {
    ...(inFlight === 0 ? {} : { maxInFlight: inFlight }),
    ...(tpm === 0 ? {} : { tokensPerMinute: tpm }),
  };
}

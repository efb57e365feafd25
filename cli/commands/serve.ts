import { parseAddressKinds } from "../../proxy-worker/routing/replica-address.ts";
import { type Command, UsageError } from "../command.ts";
import {
  engineFlag,
  IMAGE_LIMIT_OPTIONS,
  IMAGE_LIMIT_USAGE,
  imageLimitFlags,
  intFlag,
  logprobsModeFlag,
  numberFlag,
  parseFlags,
  serviceEnvFlag,
  taskCeilingsFlag,
  untilSignal,
  upstreamFlag,
} from "../flags.ts";

const usage = `Usage: polar serve [--upstream URL] [--engine vllm|sglang] [--logprobs-mode MODE] [--port 8787] [--host 127.0.0.1]
                   [--out DIR] [--control-token T] [--run N] [--log-requests] [--allow-unsandboxed]
                   [--max-task-limits NAME=N,...] [--allow-verifier-network]
                   [--service-env NAME[,NAME...]] [--max-image-mb 10] [--max-image-pixels N]
                   [--max-images-per-call 100] [--max-session-images 4096]
                   [--max-session-image-mb 1024] [--allow-replica-addresses KINDS]

The task control API locally, in one command: the proxy with POST/GET/DELETE /v1/tasks and
/openapi.json, an in-memory queue, a directory store under DIR/store and a batch runner in this
process. Without --upstream the dry-run policy is started (no GPU needed). Shards are handed out
as signed local download URLs, as an S3 store would presign them. Then, from another shell:

  node examples/trainer-submit.ts --proxy http://127.0.0.1:8787 --control-token T

  --upstream URL     an inference server (vLLM/SGLang) root; checked before starting
  --engine           vllm (default) or sglang
  --logprobs-mode MODE  what the engine's logprobs mean, recorded on every capture (default: the
                     engine's own default, raw_logprobs for vLLM); set it to match the engine's
                     flags: scripts/engine.sh starts vLLM with processed_logprobs
  --port, --host     where the proxy listens (default 127.0.0.1:8787)
  --out DIR          output directory (default .polar/serve; the store is DIR/store)
  --control-token T  the control API's bearer token (or POLAR_CONTROL_TOKEN; random if neither, printed)
  --run N            concurrent harness runs (default 4)
  --log-requests     one line per proxy call: method, path, provider, session, status, ms
  --allow-unsandboxed  without a working bwrap, run sessions unsandboxed on this host as this
                     user (otherwise serve refuses to start); also allows runtime.backend process
  --max-task-limits NAME=N,...
                     the most a submitted task may ask for (memory_mb, pids, disk_mb, output_mb,
                     cpus, gpus, max_in_flight, tokens_per_minute, timeout_seconds, steps); a task
                     over one ends ERROR at INIT naming it (as \`polar runner\`)
  --allow-verifier-network
                     a Harbor task's verifier gets a network when its task asks (as \`polar runner\`)
  --service-env NAME[,NAME...]
                     variables of this process's environment a task's side services may take;
                     never the agent's; one not listed ends its session ERROR at INIT (as \`polar runner\`)
  --allow-replica-addresses KINDS
                     where the control API's /v1/replicas may add engines beyond public addresses:
                     loopback, link-local, metadata, comma-separated, or none (default loopback:
                     engines beside serve on this host; docs/security.md)
  The proxy's image limits, as on \`polar proxy\`:
${IMAGE_LIMIT_USAGE}

Jobs live in this process: queued sessions are lost when it stops (results already written stay,
and resubmitting reruns only the sessions without one). For a fleet use \`polar proxy
--jobs-queue SQS_URL\` with \`polar runner\` (docs/control-api.md).`;

/** `--allow-replica-addresses`: the kinds, or a usage error naming the wrong one. */
function replicaAddressesFlag(spec: string) {
  const kinds = parseAddressKinds(spec);
  if (typeof kinds === "string") throw new UsageError(`--allow-replica-addresses: ${kinds}`);
  return kinds;
}

const command: Command = {
  summary: "the task control API locally: proxy + in-memory queue + directory store + runner",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: {
        upstream: { type: "string" },
        engine: { type: "string" },
        "logprobs-mode": { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        out: { type: "string" },
        "control-token": { type: "string" },
        run: { type: "string" },
        "log-requests": { type: "boolean" },
        "allow-unsandboxed": { type: "boolean" },
        "allow-verifier-network": { type: "boolean" },
        "max-task-limits": { type: "string" },
        "service-env": { type: "string", multiple: true },
        "allow-replica-addresses": { type: "string" },
        ...IMAGE_LIMIT_OPTIONS,
      },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length)
      throw new UsageError(`takes no positional arguments, got ${positionals.join(" ")}`);
    const givenToken = values["control-token"] || process.env.POLAR_CONTROL_TOKEN || undefined;
    const [{ startLocalControl }, { viewerRoutes }] = await Promise.all([
      import("../local-control.ts"),
      import("../../viewer/server/control-mount.ts"),
    ]);
    let local: Awaited<ReturnType<typeof startLocalControl>>;
    try {
      local = await startLocalControl({
        upstream: upstreamFlag(values.upstream),
        engine: engineFlag(values.engine),
        logprobsMode: logprobsModeFlag(values["logprobs-mode"]),
        port: numberFlag("port", values.port, 8787, 0, 65535),
        host: values.host,
        outDir: values.out,
        controlToken: givenToken,
        run: intFlag("run", values.run, 4, 1, 1024),
        logRequests: values["log-requests"] === true,
        allowUnsandboxed: values["allow-unsandboxed"] === true,
        allowVerifierNetwork: values["allow-verifier-network"] === true,
        serviceEnv: serviceEnvFlag(values["service-env"]),
        taskCeilings: taskCeilingsFlag(values["max-task-limits"]),
        replicaAddresses: replicaAddressesFlag(values["allow-replica-addresses"] ?? "loopback"),
        proxyLimits: imageLimitFlags(values),
        routes: viewerRoutes,
      });
    } catch (err) {
      if (err instanceof UsageError) throw err;
      console.error(`polar serve: ${(err as Error).message}`);
      return 1;
    }
    console.log(`polar serve: control API and proxy on ${local.url}; store ${local.storeDir}`);
    console.log(`polar serve: viewer at ${local.url}/viewer/ (same control token)`);
    // A token the user chose is theirs to know; a generated one must be shown to be usable.
    const token = givenToken ? "$POLAR_CONTROL_TOKEN" : local.controlToken;
    if (!givenToken)
      console.log(
        `polar serve: control token ${local.controlToken} (generated; set POLAR_CONTROL_TOKEN to choose it)`,
      );
    console.log(
      `polar serve: try \`node examples/trainer-submit.ts --proxy ${local.url} --control-token ${token}\``,
    );
    await untilSignal();
    console.error("polar serve: stopping");
    await local.close();
    return 0;
  },
};

export default command;

import { parseAddressKinds } from "../../proxy-worker/routing/replica-address.ts";
import { ENGINES, isEngineName } from "../../shared/engines.ts";
import { type Command, UsageError } from "../command.ts";
import {
  IMAGE_LIMIT_OPTIONS,
  IMAGE_LIMIT_USAGE,
  imageLimitFlags,
  logprobsModeFlag,
  numberFlag,
  parseFlags,
  storeFlag,
  untilSignal,
  upstreamFlag,
  weakSigningKeyWarning,
} from "../flags.ts";

const usage = `Usage: polar proxy --upstream URL [--upstream URL ...] [--upstreams-file FILE]
                   [--routing affinity|round_robin|least_loaded] [--max-in-flight N]
                   [--queue-wait-s 2] [--health-interval-s 5]
                   [--engine vllm|sglang] [--logprobs-mode MODE] [--stream-mode live|synthesize]
                   [--stream-flush-ms 100]
                   [--port 8787] [--host 127.0.0.1]
                   [--store DIR|s3://bucket/prefix] [--auth off] [--policy-version V]
                   [--admin-token T] [--control-token T] [--jobs-queue SQS_URL]
                   [--max-body-mb 32] [--body-timeout-s 30] [--body-idle-timeout-s 10]
                   [--max-json-depth 128] [--max-image-mb 10] [--max-image-pixels N]
                   [--max-images-per-call 100] [--max-session-images 4096]
                   [--max-session-image-mb 1024] [--allow-remote-images]
                   [--upstream-timeout-s 600] [--log-requests]
                   [--token-in-token-out] [--tito-completions PARSER|MODEL=PARSER,...]
                   [--session-max-in-flight N] [--session-tokens-per-minute N]
                   [--address-limit 120] [--address-header NAME]
                   [--allow-replica-addresses loopback,link-local,metadata]

The capture gateway on Node. Harnesses point their model base URL here; every model call is
sent to the upstream engine (vLLM or SGLang, Chat Completions), captured with its token ids
and logprobs to the store, and answered in the harness's own API shape.

  --upstream URL        inference server root, e.g. http://127.0.0.1:8000 (required); repeat it
                        for several replicas of the same model (data parallel)
  --upstreams-file FILE more replicas, one URL a line (# comments and blank lines skipped)
  --routing             how calls pick a replica: affinity (default: a session stays on the
                        replica that served its previous call, a task's samples start on the
                        same one by rendezvous hashing, bounded load), round_robin, least_loaded
  --max-in-flight N     calls in flight per replica (default: no limit, the engine queues);
                        e.g. the engine's max_num_seqs; more wait up to
  --queue-wait-s S      seconds (default 2), then get 429 (Anthropic: 529) with retry-after
  --health-interval-s S GET /health on every replica this often (default 5; POST /tokenize
                        where /health is 404); a replica that fails a call or a probe is
                        drained and tried again later
  --engine              vllm (default) or sglang: which token flags to send and read back
  --logprobs-mode MODE  what the engine's logprobs mean, recorded on every capture: raw_logprobs
                        (vLLM's default), processed_logprobs, raw_logits, processed_logits,
                        temperature_scaled (SGLang's default); set it to match the engine's flags
  --stream-mode MODE    how a harness's stream is answered: live (default with vLLM) streams the
                        engine's tokens as they are sampled; synthesize calls the engine without
                        streaming and sends the whole stream at the end (SGLang always does this)
  --stream-flush-ms N   live mode: frames made within N ms of the last write to the client go out in
                        one write (default 100; the first byte and the end are never held;
                        0 writes every chunk)
  --store               capture store: a directory (default .polar/store) or s3://bucket/prefix
  --auth off            local development only: accept any key and use it as the session id
  --policy-version V    version stamped on captures when the engine reports none
  --admin-token T       the admin credential (or POLAR_ADMIN_TOKEN): enables /admin/policy-version,
                        and only a call that carries it in x-admin-token may set
                        x-polar-policy-version. Comma-separated to rotate (current,next)
  --control-token T     the control credential (or POLAR_CONTROL_TOKEN) for /v1/tasks; without it
                        the admin token serves both. Comma-separated to rotate
  --jobs-queue SQS_URL  enables the task control API (POST/GET/DELETE /v1/tasks, /openapi.json):
                        tasks go to the store, session jobs to this queue; needs a token above
  --allow-replica-addresses KINDS  where /v1/replicas may add engines beyond public addresses:
                        loopback, link-local, metadata (comma-separated; default none: they reach
                        this host and its cloud's metadata service); replicas other proxies stored
                        are held to it too before this one calls them. --upstream is never checked
  --max-body-mb N       request body limit (default 32)
  --body-timeout-s N    the whole request body must arrive within N s (default 30): else 408
  --body-idle-timeout-s N  no body byte for N s cuts the request (default 10): 408
  --max-json-depth N    deeper nested arrays/objects are refused with 400 before inference (128)
${IMAGE_LIMIT_USAGE}
  --allow-remote-images pass http(s) image URLs to the engine, which fetches them (default: refused;
                        docs/computer-use.md)
  --upstream-timeout-s N  per-call deadline of the inference server (default 600): else 504
  --log-requests        one line per call on stderr: method, path, provider, session, status, ms
  --token-in-token-out  splice every session's prompts from its captured token ids, not only
                        tasks with agent.token_in_token_out (docs/tito.md)
  --tito-completions P  parse token-prompt answers on the proxy with P (qwen3 or hermes), for every
                        model or per model (policy=qwen3,other=hermes): token prompts then go to
                        vLLM's /inference/v1/generate when it serves it, else /v1/completions
  --no-engine-versions  do not read vLLM's GET /weight_info around each call (default: read, so
                        captures carry the engine's own weight versions; docs/engines.md)
  --session-max-in-flight N  fair share: model calls one session may have in progress; more get
                        429 with retry-after. Applies to tokens without limits of their own
                        (runners put the task's agent.proxy_limits, or their defaults, in the token)
  --session-tokens-per-minute N  fair share: prompt + completion tokens one session may use per
                        minute (same rule); default for both: no limit
  --address-limit N     requests a minute one address may send without a valid credential
                        (answered 401/404) before it gets 429 (default 120; 0: off). Sessions whose
                        token this proxy already verified are never refused by it
  --address-header NAME take the client address from this header (e.g. x-real-ip, or the last
                        x-forwarded-for entry), set by a reverse proxy in front; default: the peer
  --port, --host        where to listen (default 127.0.0.1:8787)

For a local control API without SQS (in-memory queue, directory store, a runner in-process), use
\`polar serve\`.

Environment: POLAR_SIGNING_KEY (required unless --auth off), POLAR_ADMIN_TOKEN,
POLAR_CONTROL_TOKEN, AWS_* for s3:// (POLAR_STORE_TIMEOUT_S, POLAR_STORE_CONNECT_TIMEOUT_S bound
each store call; defaults 20 and 5). See docs/proxy.md, docs/routing.md, docs/security.md and
infra/README.md.`;

/** `--upstream` (repeatable) then the lines of `--upstreams-file`, each an http(s) URL, no repeats. */
async function upstreamList(flags: string[], file: string | undefined): Promise<string[]> {
  const urls = [...flags];
  if (file !== undefined) {
    const { readFile } = await import("node:fs/promises");
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      throw new UsageError(`--upstreams-file ${file} cannot be read: ${(err as Error).message}`);
    }
    for (const line of text.split(/\r?\n/)) {
      const url = line.replace(/#.*/, "").trim();
      if (url) urls.push(url);
    }
  }
  for (const url of urls) upstreamFlag(url);
  const seen = new Set<string>();
  for (const url of urls) {
    const id = url.replace(/\/+$/, "");
    if (seen.has(id)) throw new UsageError(`upstream ${url} is listed twice`);
    seen.add(id);
  }
  return urls;
}

/** The control API's queue (the runner's SDK-based SQS queue) and, for s3:// stores, a presigner. */
async function controlDeps(
  queueUrl: string,
  tokens: { adminToken?: string; controlToken?: string },
  storeSpec: string | undefined,
) {
  const [{ openQueue }, { presignerForStoreSpec }] = await Promise.all([
    import("../../batch-runner/queue/open-queue.ts"),
    import("../../proxy-worker/control/s3-presigner.ts"),
  ]);
  return {
    jobs: openQueue(queueUrl),
    ...tokens,
    presignGet: storeSpec ? presignerForStoreSpec(storeSpec, process.env) : undefined,
  };
}

const command: Command = {
  summary: "the capture gateway on Node (harness -> proxy -> vLLM/SGLang)",
  usage,
  async run(argv) {
    const { values } = parseFlags({
      args: argv,
      options: {
        upstream: { type: "string", multiple: true },
        "upstreams-file": { type: "string" },
        routing: { type: "string" },
        "max-in-flight": { type: "string" },
        "queue-wait-s": { type: "string" },
        "health-interval-s": { type: "string" },
        engine: { type: "string" },
        "logprobs-mode": { type: "string" },
        "stream-mode": { type: "string" },
        "stream-flush-ms": { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        store: { type: "string" },
        auth: { type: "string" },
        "policy-version": { type: "string" },
        "admin-token": { type: "string" },
        "control-token": { type: "string" },
        "body-timeout-s": { type: "string" },
        "body-idle-timeout-s": { type: "string" },
        "max-json-depth": { type: "string" },
        "max-body-mb": { type: "string" },
        ...IMAGE_LIMIT_OPTIONS,
        "allow-remote-images": { type: "boolean" },
        "token-in-token-out": { type: "boolean" },
        "tito-completions": { type: "string" },
        "no-engine-versions": { type: "boolean" },
        "upstream-timeout-s": { type: "string" },
        "jobs-queue": { type: "string" },
        "log-requests": { type: "boolean" },
        "session-max-in-flight": { type: "string" },
        "session-tokens-per-minute": { type: "string" },
        "address-limit": { type: "string" },
        "address-header": { type: "string" },
        "allow-replica-addresses": { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    });
    const upstreams = await upstreamList(values.upstream ?? [], values["upstreams-file"]);
    if (upstreams.length === 0)
      throw new UsageError("--upstream URL is required (the vLLM/SGLang server, e.g. http://127.0.0.1:8000)");
    const [upstream, ...moreUpstreams] = upstreams;
    const { isRoutingPolicy, ROUTING_POLICIES } = await import("../../proxy-worker/routing/policies.ts");
    const routing = values.routing ?? "affinity";
    if (!isRoutingPolicy(routing)) {
      throw new UsageError(
        `--routing must be one of ${ROUTING_POLICIES.join(", ")}, got ${JSON.stringify(routing)}`,
      );
    }
    const maxInFlight = numberFlag(
      "max-in-flight",
      values["max-in-flight"],
      Number.POSITIVE_INFINITY,
      1,
      100_000,
    );
    const queueWaitS = numberFlag("queue-wait-s", values["queue-wait-s"], 2, 0, 60);
    const healthIntervalS = numberFlag("health-interval-s", values["health-interval-s"], 5, 0.1, 3600);
    const engine = values.engine ?? "vllm";
    if (!isEngineName(engine)) {
      throw new UsageError(`--engine must be ${ENGINES.join(" or ")}, got ${JSON.stringify(engine)}`);
    }
    const logprobsMode = logprobsModeFlag(values["logprobs-mode"]);
    const streamMode = values["stream-mode"];
    if (streamMode !== undefined && streamMode !== "live" && streamMode !== "synthesize") {
      throw new UsageError(`--stream-mode must be live or synthesize, got ${JSON.stringify(streamMode)}`);
    }
    const flushFlag = values["stream-flush-ms"];
    const streamFlushMs =
      flushFlag === undefined ? undefined : numberFlag("stream-flush-ms", flushFlag, 0, 0, 10_000);
    if (values.auth !== undefined && values.auth !== "off") {
      throw new UsageError(
        `--auth accepts only "off" (token auth is the default), got ${JSON.stringify(values.auth)}`,
      );
    }
    const authOff = values.auth === "off";
    const signingKey = process.env.POLAR_SIGNING_KEY;
    if (!authOff && !signingKey) {
      throw new UsageError(
        "POLAR_SIGNING_KEY is not set: the proxy needs it to verify session tokens. Set it to the key the runner uses, or pass --auth off for local development.",
      );
    }
    const weak = authOff ? null : weakSigningKeyWarning(signingKey);
    if (weak) console.error(`polar proxy: ${weak}`);
    const port = numberFlag("port", values.port, 8787, 0, 65535);
    const maxBodyMb = numberFlag("max-body-mb", values["max-body-mb"], 32, 0.001, 4096);
    const timeoutS = numberFlag("upstream-timeout-s", values["upstream-timeout-s"], 600, 1, 86_400);
    const bodyTimeoutS = numberFlag("body-timeout-s", values["body-timeout-s"], 30, 0.1, 3600);
    const bodyIdleS = numberFlag("body-idle-timeout-s", values["body-idle-timeout-s"], 10, 0.1, 3600);
    const maxJsonDepth = numberFlag("max-json-depth", values["max-json-depth"], 128, 1, 100_000);
    const imageLimits = imageLimitFlags(values);
    const optionalInt = (name: string, max: number) => {
      const given = values[name as keyof typeof values] as string | undefined;
      return given === undefined ? undefined : Math.floor(numberFlag(name, given, 1, 1, max));
    };
    const sessionMaxInFlight = optionalInt("session-max-in-flight", 4096);
    const sessionTokensPerMinute = optionalInt("session-tokens-per-minute", 10_000_000_000);
    const addressLimit = Math.floor(numberFlag("address-limit", values["address-limit"], 120, 0, 1_000_000));
    const addressHeader = values["address-header"];
    if (addressHeader !== undefined && !/^[A-Za-z0-9-]+$/.test(addressHeader)) {
      throw new UsageError(`--address-header must be a header name, got ${JSON.stringify(addressHeader)}`);
    }
    const adminToken = values["admin-token"] || process.env.POLAR_ADMIN_TOKEN || undefined;
    const controlToken = values["control-token"] || process.env.POLAR_CONTROL_TOKEN || undefined;
    const jobsQueue = values["jobs-queue"];
    if (jobsQueue !== undefined && !adminToken && !controlToken) {
      throw new UsageError(
        "--jobs-queue turns on the task control API, which needs --admin-token or, better, its own --control-token (or POLAR_ADMIN_TOKEN / POLAR_CONTROL_TOKEN)",
      );
    }
    if (jobsQueue !== undefined && !/^https?:\/\/[^/]/.test(jobsQueue)) {
      throw new UsageError(
        `--jobs-queue must be an SQS queue URL (http(s)://...), got ${JSON.stringify(jobsQueue)}`,
      );
    }
    const [{ DEFAULT_STORE_DIR }, { startNodeProxy }] = await Promise.all([
      import("../../shared/node/open-store.ts"),
      import("../../proxy-worker/node.ts"),
    ]);
    const { parseParserSpec } = await import("../../proxy-worker/tito/completions-channel.ts");
    const titoSpec = values["tito-completions"];
    const titoCompletions = titoSpec === undefined ? undefined : parseParserSpec(titoSpec);
    if (typeof titoCompletions === "string") throw new UsageError(`--tito-completions: ${titoCompletions}`);
    const replicaAddresses = parseAddressKinds(values["allow-replica-addresses"] ?? "none");
    if (typeof replicaAddresses === "string")
      throw new UsageError(`--allow-replica-addresses: ${replicaAddresses}`);
    const store = await storeFlag(values.store ?? DEFAULT_STORE_DIR);
    const proxy = await startNodeProxy({
      upstreamUrl: upstream,
      upstreamUrls: moreUpstreams,
      routing: {
        policy: routing,
        maxInFlight: Number.isFinite(maxInFlight) ? Math.floor(maxInFlight) : maxInFlight,
        queueWaitMs: Math.round(queueWaitS * 1000),
        probeIntervalMs: Math.round(healthIntervalS * 1000),
      },
      upstreamTimeoutMs: timeoutS * 1000,
      engine,
      ...(logprobsMode ? { logprobsMode } : {}),
      ...(streamMode ? { streamMode } : {}),
      ...(streamFlushMs !== undefined ? { streamFlushMs } : {}),
      store,
      host: values.host ?? "127.0.0.1",
      port,
      ...(authOff ? { auth: "off" as const } : { signingKey }),
      policyVersion: values["policy-version"] ?? null,
      logRequests: values["log-requests"] === true,
      log: (m) => console.error(`[polar proxy] ${m}`),
      adminToken,
      tokenInTokenOut: values["token-in-token-out"] === true,
      ...(titoCompletions ? { titoCompletions } : {}),
      ...(values["no-engine-versions"] ? { engineVersions: false } : {}),
      sessionLimits: {
        ...(sessionMaxInFlight !== undefined ? { maxInFlight: sessionMaxInFlight } : {}),
        ...(sessionTokensPerMinute !== undefined ? { tokensPerMinute: sessionTokensPerMinute } : {}),
      },
      ...(addressLimit > 0
        ? { addressLimit: { perMinute: addressLimit, ...(addressHeader ? { header: addressHeader } : {}) } }
        : {}),
      limits: {
        maxBodyBytes: Math.floor(maxBodyMb * 1024 * 1024),
        bodyTimeoutMs: Math.round(bodyTimeoutS * 1000),
        bodyIdleTimeoutMs: Math.round(bodyIdleS * 1000),
        maxJsonDepth: Math.floor(maxJsonDepth),
        ...imageLimits,
      },
      ...(values["allow-remote-images"] ? { allowRemoteImages: true } : {}),
      control: jobsQueue
        ? {
            ...(await controlDeps(jobsQueue, { adminToken, controlToken }, values.store)),
            replicaAddresses: { allow: replicaAddresses },
          }
        : undefined,
      // The viewer's pages, read-only, behind the control API's credential (docs/viewer.md).
      extraRoutes: jobsQueue
        ? await (await import("../../viewer/server/control-mount.ts")).viewerRoutes(
            store,
            (controlToken ?? adminToken) as string,
          )
        : undefined,
    });
    console.log(
      `polar proxy: listening on ${proxy.url} -> ${upstreams.length > 1 ? `${upstreams.length} replicas (${routing})` : upstream} (${engine}), captures to ${store.url}` +
        (authOff ? " [auth OFF: any key is accepted]" : "") +
        (jobsQueue ? `; task control API on, jobs to ${jobsQueue}` : ""),
    );
    await untilSignal();
    await proxy.close();
    return 0;
  },
};

export default command;

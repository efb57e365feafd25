import { Hono } from "hono";
import { memoryPolicyVersion, mountAdmin, type PolicyVersionSource } from "./admin.ts";
import { type AuthConfig, authenticate, extractKey, isVerifiedToken, type SessionIdentity } from "./auth.ts";
import { openaiErrorEnvelope } from "./codecs/common/openai-error-envelope.ts";
import { defaultCodecs } from "./codecs/registry.ts";
import { createControlApp } from "./control/control-app.ts";
import { SharedRuntimeState } from "./control/shared-state.ts";
import { mountControlHint } from "./control-hint.ts";
import { handleCountTokens } from "./count-tokens.ts";
import { parseCredentials } from "./credentials.ts";
import type { Gateway, ProxyDeps } from "./deps.ts";
import { detectRoute, type Route, servedRoutes, splitTokenPrefix } from "./detect.ts";
import { ENGINES } from "./engines/engine.ts";
import { engineAdapters } from "./engines/registry.ts";
import { EngineVersions } from "./engines/weight-version.ts";
import { addressFromHeader, addressGate, markAuthenticated } from "./fair-share/address-gate.ts";
import { AddressLimiter } from "./fair-share/address-limiter.ts";
import { rateLimited } from "./fair-share/rate-limited.ts";
import { releaseOnEnd } from "./fair-share/release-on-end.ts";
import { SessionLimiter, tokensOfBytes } from "./fair-share/session-limiter.ts";
import { handleGenerate } from "./generate.ts";
import { resolveLimits } from "./limits.ts";
import { ProxyMetrics } from "./metrics.ts";
import { ModelCatalog, modelsOf } from "./models.ts";
import { vetPolicyVersionHeader } from "./policy-version-header.ts";
import { providerError } from "./provider-error.ts";
import { readJsonBody } from "./request-body.ts";
import { requestLog } from "./request-log.ts";
import { ReplicaSet } from "./routing/replicas.ts";
import { DEFAULT_STREAM_FLUSH_MS, resolveStreamMode } from "./stream/stream-mode.ts";
import { SessionCaptureCache } from "./tito/session-lookup.ts";
import { tokenizeBodyBuilders } from "./tokenize-body.ts";

export type { ProxyDeps } from "./deps.ts";

/**
 * The gateway as a Hono app. Every runtime concern (store backend, pooled upstream fetch, clock) comes
 * in through `deps`, so the same app runs under @hono/node-server and in a Worker.
 */
export function createProxyApp(deps: ProxyDeps): Hono {
  const g = resolve(deps);
  const app = new Hono();
  if (deps.logRequests) app.use("*", requestLog(g.log, g.clock, g.auth.mode === "off"));
  app.get("/healthz", (c) =>
    c.json({ ok: true, engine: g.engine.name, policy_version: g.policyVersion.get() }),
  );
  app.get("/metrics", (c) =>
    c.text(g.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }),
  );
  mountAddressGate(app, g, deps);
  mountAdmin(app, g.policyVersion, g.adminTokens, g.runtime);
  if (deps.control) {
    app.route(
      "/",
      createControlApp({
        store: g.store,
        control: deps.control,
        clock: g.clock,
        log: g.log,
        runtime: g.runtime,
      }),
    );
  } else mountControlHint(app);
  deps.extraRoutes?.(app);
  app.all("*", (c) => dispatch(g, c.req.raw));
  app.onError((err, c) => {
    g.log(`proxy bug on ${c.req.method} ${new URL(c.req.url).pathname}: ${err.stack ?? err}`);
    // The message may name internal paths or URLs: it goes to the log only.
    return c.json(openaiErrorEnvelope(500, "internal proxy error (details are in the proxy's log)"), 500);
  });
  return app;
}

function resolve(deps: ProxyDeps): Gateway {
  const engine = engineAdapters[deps.engine ?? "vllm"];
  if (!engine)
    throw new Error(`unknown engine ${JSON.stringify(deps.engine)}: expected one of ${ENGINES.join(", ")}`);
  let auth: AuthConfig;
  if (deps.auth === "off") auth = { mode: "off" };
  else if (deps.signingKey) auth = { mode: "token", signingKey: deps.signingKey };
  else
    throw new Error(
      "a signing key is required to verify session tokens (POLAR_SIGNING_KEY), unless auth is off",
    );
  const limits = resolveLimits(deps.limits);
  const log = deps.log ?? ((m: string) => console.error(`[polar proxy] ${m}`));
  const pv = deps.policyVersion;
  const policyVersion: PolicyVersionSource =
    pv && typeof pv === "object" ? pv : memoryPolicyVersion(typeof pv === "string" ? pv : null);
  const replicas = withUpstreamLog(deps.replicas ?? new ReplicaSet([deps.upstream], {}, deps.clock), log);
  const configured = { ...deps.upstream, log: deps.upstream.log ?? log };
  const clock = deps.clock ?? Date.now;
  const runtime = deps.control?.runtimeState
    ? new SharedRuntimeState({
        store: deps.store,
        replicas,
        policyVersion,
        clock,
        addresses: deps.control.replicaAddresses,
        log,
      })
    : null;
  return {
    store: deps.store,
    // Tokenizing and probes ask the configured upstream while it is in the replica set; once the
    // trainer replaced it (docs/control-api.md), a healthy replica of the same model stands in.
    get upstream() {
      return replicas.get(configured.baseUrl) ? configured : (replicas.healthy()[0]?.upstream ?? configured);
    },
    replicas,
    engine,
    logprobsMode: deps.logprobsMode ?? engine.defaultLogprobsMode,
    streamMode: resolveStreamMode(
      deps.streamMode,
      engine,
      deps.log ?? ((m) => console.error(`[polar proxy] ${m}`)),
    ),
    streamFlushMs: deps.streamFlushMs ?? DEFAULT_STREAM_FLUSH_MS,
    metrics: new ProxyMetrics(),
    auth,
    limits,
    allowRemoteImages: deps.allowRemoteImages === true,
    adminTokens: parseCredentials(deps.adminToken),
    policyVersion,
    runtime,
    engineVersions: new EngineVersions(
      deps.engineVersions ?? engine.name === "vllm",
      deps.clock,
      undefined,
      () => policyVersion.get() !== null && policyVersion.setBy?.() === "trainer",
    ),
    clock,
    codecs: deps.codecs ?? defaultCodecs,
    log,
    captureRetry: deps.captureRetry ?? {},
    gzip: deps.gzip,
    closeOnUnreadBody: deps.closeOnUnreadBody ?? false,
    fairShare: new SessionLimiter(deps.sessionLimits ?? {}, deps.clock ?? Date.now),
    tito: {
      forAllSessions: deps.tokenInTokenOut === true,
      cache: new SessionCaptureCache(),
      completions: deps.titoCompletions ?? null,
    },
    // The model list and context length come from a healthy replica, not always the first one.
    models: new ModelCatalog(() => replicas.healthy()[0]?.upstream ?? deps.upstream),
  };
}

/** Replicas built by the host log their upstream's address like the single upstream does. */
function withUpstreamLog(replicas: ReplicaSet, log: (message: string) => void): ReplicaSet {
  for (const r of replicas.replicas) r.upstream = { ...r.upstream, log: r.upstream.log ?? log };
  return replicas;
}

async function dispatch(g: Gateway, request: Request): Promise<Response> {
  const startedAt = g.clock();
  const url = new URL(request.url);
  const { token, path } = splitTokenPrefix(url.pathname);
  const route: Route = detectRoute(request.method, path, request.headers, g.codecs);
  const key = extractKey(request.headers, url.searchParams, token);

  // Decided from the path and headers alone: nothing unauthenticated makes the proxy read a body.
  if (route.kind === "unknown") return unknownRoute(g, request, route.provider, path, key, startedAt);

  const auth = await authenticate(key, g.auth, startedAt);
  if (!auth.ok) return unread(g, request, providerError(g.codecs, route.provider, 401, auth.message));
  markAuthenticated(request);

  // Every route a session can call goes through its share, before its body is read: a session over
  // it costs the proxy almost nothing. Nothing is captured, since nothing was asked of the engine
  // (docs/security.md "Fair share at the proxy").
  const admission = g.fairShare.admit(auth.identity);
  if (!admission.ok) {
    g.metrics.fairShareRefused(admission.limit);
    const kind = admission.limit === "tokens_per_minute" ? "tokens" : "requests";
    return unread(
      g,
      request,
      rateLimited(g.codecs, route.provider, {
        message: admission.message,
        kind,
        retryAfterMs: admission.retryAfterMs,
      }),
    );
  }
  const { ticket } = admission;
  let answer: Response;
  try {
    // Begun now, awaited before any engine is chosen: the read starts after the call arrived.
    const fresh = freshRuntimeState(g);
    answer = await sessionCall(g, request, route, auth.identity, startedAt, fresh);
  } catch (err) {
    ticket.release();
    throw err;
  }
  return ticket.held ? releaseOnEnd(answer, () => ticket.release()) : answer;
}

/** A call the session's share admitted: model listing, token counting or a model call. */
async function sessionCall(
  g: Gateway,
  request: Request,
  route: Exclude<Route, { kind: "unknown" }>,
  identity: SessionIdentity,
  startedAt: number,
  fresh: Promise<string | null>,
): Promise<Response> {
  const staleState = async () => {
    const why = await fresh;
    return why === null ? null : providerError(g.codecs, route.provider, 503, why);
  };
  if (route.kind === "list_models") return (await staleState()) ?? listModels(g, route.provider);
  const vetted = await vetPolicyVersionHeader(
    request.headers,
    g.adminTokens,
    g.log,
    `session ${identity.sessionId}`,
  );
  if (!vetted.ok) return providerError(g.codecs, route.provider, 400, vetted.message);
  const body = await readJsonBody(request, g.limits);
  if (!body.ok) {
    // Taken in (up to the size cap) and refused: it costs its session what was read.
    g.fairShare.charge(identity, tokensOfBytes(body.received));
    return providerError(g.codecs, route.provider, body.status, body.message);
  }
  const refused = await staleState();
  if (refused) return refused;
  const url = new URL(request.url);
  const { path } = splitTokenPrefix(url.pathname);
  const ctx = { path, query: url.searchParams, pathModel: route.pathModel };
  if (route.kind === "count_tokens") {
    const build = tokenizeBodyBuilders(g, route.provider, ctx);
    if (!build)
      return providerError(
        g.codecs,
        route.provider,
        501,
        `token counting for ${route.provider} is not available`,
      );
    return handleCountTokens(g, route.provider, { identity, body: body.json, bytes: body.bytes }, build);
  }
  // The registry is total over PROVIDERS (a missing module fails to compile), so there is always one.
  const codec = g.codecs[route.provider];
  return handleGenerate(g, {
    provider: route.provider,
    codec,
    identity,
    body: body.json,
    bodyBytes: body.bytes,
    ctx: { ...ctx, pathStream: route.pathStream },
    headers: vetted.headers,
    startedAt,
  });
}

/**
 * The trainer's replica set and version as stored now (control/shared-state.ts), or why they could
 * not be read: the call is then refused 503 before any engine sees it, since routing it by an older
 * set or stamping an older version is the silent off-policy data the stored state exists to prevent.
 * Refused too when this proxy's operator allows none of the stored replicas' addresses.
 */
function freshRuntimeState(g: Gateway): Promise<string | null> {
  if (!g.runtime) return Promise.resolve(null);
  const runtime = g.runtime;
  return runtime.refresh().then(
    () => {
      // Which replicas and why were logged once, when this proxy read that set.
      if (runtime.refusedHere() === null) return null;
      return "the trainer's engine set has no replica this proxy may call (see the proxy's log)";
    },
    (err: Error) => {
      g.log(err.message);
      // The store's location stays in the log: the client is a harness.
      return "the proxy could not read the trainer's engine set and policy version from its store (retry)";
    },
  );
}

/**
 * The per-address limit before authentication, after `/healthz` and `/metrics` (monitors poll them
 * without credentials) and before every route that asks for one.
 */
function mountAddressGate(app: Hono, g: Gateway, deps: ProxyDeps): void {
  const opts = deps.addressLimit;
  if (!opts) return;
  const limiter = new AddressLimiter(opts.perMinute, g.clock);
  const header = opts.header;
  app.use(
    "*",
    addressGate({
      limiter,
      addressOf: header
        ? (request) => addressFromHeader(request, header)
        : (request, env) => deps.clientAddress?.(request, env) ?? null,
      knownCredential: (request) => {
        const url = new URL(request.url);
        const key = extractKey(request.headers, url.searchParams, splitTokenPrefix(url.pathname).token);
        return isVerifiedToken(key, g.auth, g.clock());
      },
      providerOf: (request) =>
        detectRoute(
          request.method,
          splitTokenPrefix(new URL(request.url).pathname).path,
          request.headers,
          g.codecs,
        ).provider,
      refuse: (request, provider, message, retryAfterMs) =>
        unread(g, request, rateLimited(g.codecs, provider, { message, kind: "requests", retryAfterMs })),
      onRefused: () => g.metrics.fairShareRefused("address"),
    }),
  );
}

/**
 * 404 in the shape the client most likely parses, guessed from the path and headers. The body is
 * never read: anyone can reach an unknown route, so it must cost no memory and no parse.
 */
async function unknownRoute(
  g: Gateway,
  request: Request,
  provider: Route["provider"],
  path: string,
  key: string | null,
  now: number,
): Promise<Response> {
  // A session's own credential on a wrong path is no scan: its 404s must not use up the address's
  // budget, or one session could lock every new session on its node out (fair-share/address-gate.ts).
  if (key !== null && (await authenticate(key, g.auth, now)).ok) markAuthenticated(request);
  return unread(
    g,
    request,
    providerError(
      g.codecs,
      provider,
      404,
      `no route for ${request.method} ${path}; this proxy serves ${servedRoutes(g.codecs)}`,
    ),
  );
}

/**
 * Small bodies are cheap to skip on a kept-alive connection (the Node server drains them); a larger
 * or unsized one ends the connection instead, so its bytes are never taken in. A client still
 * sending may then see the connection reset instead of the answer: the price of not reading.
 */
const SKIPPABLE_BODY_BYTES = 1024 * 1024;

function unread(g: Gateway, request: Request, res: Response): Response {
  if (!g.closeOnUnreadBody || !request.body) return res;
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (!(declared <= SKIPPABLE_BODY_BYTES)) res.headers.set("connection", "close");
  return res;
}

async function listModels(g: Gateway, provider: Route["provider"]): Promise<Response> {
  const r = await g.models.list();
  if (!r.ok)
    return providerError(
      g.codecs,
      provider,
      r.status === 404 ? 502 : r.status,
      `listing models failed: ${r.message}`,
    );
  const body = g.codecs[provider].listModels(modelsOf(r.body));
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}

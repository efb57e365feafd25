import { newUlid } from "../shared/ids.ts";
import type { Provider } from "../shared/schemas/capture.ts";
import type { SessionIdentity } from "./auth.ts";
import {
  buildCaptureRecord,
  type CaptureFacts,
  CaptureWriteError,
  requestBytes,
  stampEngineRead,
  stampEngineVersions,
  versionsInAnswer,
  writeCapture,
} from "./capture.ts";
import type { ChatRequest } from "./chat/types.ts";
import { engineFieldRefusal, stripClientEngineFields } from "./client-engine-fields.ts";
import { CodecError, type DecodedRequest, type ProviderCodec, type RequestContext } from "./codecs/codec.ts";
import type { Gateway } from "./deps.ts";
import { clientAskedLogprobs, type EngineReading, isObject } from "./engines/engine.ts";
import { costOfCall, tokensOfBytes } from "./fair-share/session-limiter.ts";
import { chargeSessionImages } from "./images/session-budget.ts";
import { vetImages } from "./images/vet-images.ts";
import { providerError } from "./provider-error.ts";
import { postRouted } from "./routing/routed-call.ts";
import { applyTaskSampling, samplingRecord } from "./sampling.ts";
import { streamLive } from "./stream/live-generate.ts";
import { sessionKey } from "./tito/session-lookup.ts";
import { confirmedByEngine, outcomeLabel, spliceTokenPrompt, titoEnabled } from "./tito/splice.ts";
import { tokenPromptCall } from "./tito/token-prompt.ts";
import type { UpstreamResult } from "./upstream.ts";

export const POLICY_VERSION_HEADER = "x-polar-policy-version";
export const CAPTURE_ID_HEADER = "x-polar-capture-id";

export interface GenerateCall {
  provider: Provider;
  codec: ProviderCodec;
  identity: SessionIdentity;
  body: unknown;
  /** The body as received (UTF-8 JSON of `body`), stored verbatim in the capture. */
  bodyBytes?: Uint8Array;
  ctx: RequestContext;
  headers: Headers;
  startedAt: number;
}

/**
 * One model call: decode, ask the engine (never streaming), store the capture, then answer in the
 * client's shape. The capture is written before any byte of the answer, so a stream the client
 * sees complete always has its capture; if the store fails the client gets a 5xx and retries.
 */
export async function handleGenerate(g: Gateway, call: GenerateCall): Promise<Response> {
  const { provider, codec } = call;
  const fail = (status: number, message: string) => providerError(g.codecs, provider, status, message);

  const decodedOrError = await decode(g, call);
  const refused =
    decodedOrError instanceof Response ? decodedOrError : await chargeImages(g, call, decodedOrError.images);
  if (refused) {
    // Refused before any engine saw it, but read and parsed all the same: it costs its size.
    g.fairShare.charge(call.identity, tokensOfBytes(call.bodyBytes?.byteLength ?? 0));
    return refused;
  }
  const { decoded } = decodedOrError as Decoded;

  const captureId = newUlid(call.startedAt);
  // Read before the call: an admin update while the engine generates must show as a version change.
  const pinnedVersion = call.headers.get(POLICY_VERSION_HEADER);
  const versionAtStart = pinnedVersion ?? g.policyVersion.get();
  const versionSetBy = pinnedVersion !== null ? "proxy" : (g.policyVersion.setBy?.() ?? "proxy");
  const { chat: clientChat } = stripClientEngineFields(decoded.chat);
  const { chat: sampledChat, overrides } = applyTaskSampling(clientChat, call.identity.sampling);
  const chatRequest = g.engine.prepareRequest(sampledChat);
  // Token-in-token-out: spliced ids go on the engine's token channel; the capture keeps the chat body.
  const tito = titoEnabled(g, call.identity) ? await spliceTokenPrompt(g, call.identity, chatRequest) : null;
  const viaIds = tito?.kind === "spliced" ? await tokenPromptCall(g, chatRequest, tito.ids) : null;
  // A live stream holds its replica for the whole answer; a token-prompt call is never streamed.
  const leased =
    decoded.stream && g.streamMode === "live" && !viaIds ? await g.replicas.acquire(call.identity) : null;
  const lease = leased?.ok ? leased.lease : null;
  const routed = lease
    ? null
    : await postRouted(
        g.replicas,
        call.identity,
        viaIds?.path ?? "/v1/chat/completions",
        viaIds?.body ?? chatRequest,
        g.engineVersions,
      );
  // Read again once the engine answered: a trainer's update during the call shows as a change.
  const versionEnd =
    routed?.kind === "answered"
      ? await versionNow(g, pinnedVersion)
      : { version: versionAtStart, note: null };
  const facts: CaptureFacts = {
    captureId,
    identity: call.identity,
    provider,
    path: call.ctx.path,
    stream: decoded.stream,
    modelRequested: decoded.model ?? null,
    request: call.body,
    requestJson: call.bodyBytes,
    chatRequest,
    upstreamRequest: viaIds && { channel: viaIds.channel, body: viaIds.body },
    startedAt: call.startedAt,
    endedAt: g.clock(),
    reading: null,
    policyVersion: versionAtStart,
    policyVersionEnd: versionEnd.version,
    versionSetBy,
    versionNote: versionEnd.note,
    sampling: samplingRecord(chatRequest, overrides, g.logprobsMode),
    parallelToolCallsDisabled: parallelToolCallsDisabled(g, provider, call.body, decoded.chat),
    replica: lease ? lease.replica.id : routed?.kind === "answered" ? routed.replica.id : null,
    tito: tito && { outcome: outcomeLabel(tito), parentCaptureId: tito.parentCaptureId },
    error: null,
  };
  let upstream: UpstreamResult;
  if (lease) {
    const noteIds = (f: CaptureFacts) => f.reading && noteMissingIds(g, f, f.reading);
    // Before the stream starts, on the replica that holds it: the version of the first token.
    const engineVersionStart = await g.engineVersions.read(lease.replica.upstream);
    const liveCall = {
      engineVersionStart,
      proxyVersionNow: () => versionNow(g, pinnedVersion),
      codec,
      decoded,
      chatRequest,
      facts,
      startedAt: call.startedAt,
      noteMissingIds: noteIds,
      upstream: lease.replica.upstream,
      release: lease.release,
    };
    const answer = await streamLive(g, { ...liveCall, captureIdHeader: CAPTURE_ID_HEADER });
    if (answer instanceof Response) return answer;
    upstream = answer.notStreamed;
    facts.endedAt = g.clock();
  } else if (routed === null || routed.kind === "refused") {
    // Back-pressure: nothing reached an engine. The refusal is captured like any failed call.
    const message = routed?.message ?? "no replica";
    const status = provider === "anthropic" ? 529 : 429;
    g.metrics.refused(provider);
    facts.error = { status, message };
    const refusal = fail(status, message);
    if (routed) refusal.headers.set("retry-after", String(routed.retryAfterSeconds));
    return (await store(g, facts)) ?? withCaptureId(refusal, captureId);
  } else {
    g.metrics.routed(
      routed.replica.index,
      routed.failedOver.map((r) => r.index),
    );
    upstream = viaIds ? viaIds.finish(routed.result) : routed.result;
    stampEngineRead(facts, routed.versions);
  }

  if (!upstream.ok) {
    facts.error = { status: upstream.status, message: upstream.message };
    return (await store(g, facts)) ?? withCaptureId(fail(upstream.status, upstream.message), captureId);
  }
  const shapeProblem = notAChatCompletion(upstream.body);
  if (shapeProblem) {
    facts.error = { status: 502, message: shapeProblem };
    return (await store(g, facts)) ?? withCaptureId(fail(502, shapeProblem), captureId);
  }

  const reading: EngineReading = g.engine.readResponse(upstream.body, clientAskedLogprobs(decoded.chat));
  facts.reading = reading;
  if (tito) {
    const confirmed = confirmedByEngine(tito, reading.promptTokenIds);
    if (confirmed !== tito)
      g.log(`capture ${captureId}: the ${g.engine.name} upstream ignored the token prompt (docs/tito.md)`);
    facts.tito = { outcome: outcomeLabel(confirmed), parentCaptureId: confirmed.parentCaptureId };
  }
  stampEngineVersions(facts, versionsInAnswer(reading));
  noteMissingIds(g, facts, reading);
  g.metrics.promptTokens(g.engine.name, provider, reading.forCapture.usage);

  const encodeCtx = { decoded, now: Math.floor(call.startedAt / 1000) };
  let answer: Response;
  try {
    answer = decoded.stream
      ? sseResponse(codec.encodeStream(reading.forClient, encodeCtx))
      : jsonResponse(codec.encodeResponse(reading.forClient, encodeCtx));
  } catch (err) {
    // A codec bug on a valid upstream answer: the tokens are still captured, the client gets a 500.
    const message = `could not translate the upstream answer to ${provider}: ${(err as Error).message}`;
    g.log(message);
    facts.error = { status: 500, message };
    return (await store(g, facts)) ?? withCaptureId(fail(500, message), captureId);
  }
  return (await store(g, facts)) ?? withCaptureId(answer, captureId);
}

interface Decoded {
  decoded: DecodedRequest;
  /** The call's distinct inline images, each checked (images/vet-images.ts). */
  images: Uint8Array[];
}

/** Decodes with the upstream context length once it is known; the first call fetches it only for valid input. */
async function decode(g: Gateway, call: GenerateCall): Promise<Decoded | Response> {
  const fail = (status: number, message: string) => providerError(g.codecs, call.provider, status, message);
  const cached = g.models.cachedMaxModelLen();
  try {
    const first = call.codec.decodeRequest(call.body, { ...call.ctx, maxModelLen: cached.value });
    const refusal = engineFieldRefusal(first.chat);
    if (refusal) return fail(400, refusal);
    const images = vetImages(first.chat, { ...g.limits, allowRemoteImages: g.allowRemoteImages });
    if (cached.known) return { decoded: first, images };
    // Only now, with input known to be valid, may the proxy talk to the upstream.
    const maxModelLen = await g.models.maxModelLen();
    const decoded =
      maxModelLen === undefined ? first : call.codec.decodeRequest(call.body, { ...call.ctx, maxModelLen });
    return { decoded, images };
  } catch (err) {
    if (err instanceof CodecError) return fail(err.status, err.message);
    g.log(`${call.provider} codec threw on a request: ${(err as Error).stack ?? err}`);
    return fail(400, `the request could not be read as ${call.provider}: ${(err as Error).message}`);
  }
}

/**
 * Null when the session's store budget takes the call's new images (images/session-budget.ts);
 * else the 400 naming the cap, or a 503 when the budget could not be read or written. Either way
 * nothing of the call is stored and no engine sees it.
 */
async function chargeImages(g: Gateway, call: GenerateCall, images: Uint8Array[]): Promise<Response | null> {
  if (images.length === 0) return null;
  try {
    const refusal = await chargeSessionImages(g.store, call.identity, images, g.limits);
    return refusal === null ? null : providerError(g.codecs, call.provider, 400, refusal);
  } catch (err) {
    g.log(`image budget of session ${call.identity.sessionId}: ${(err as Error).message}`);
    return providerError(
      g.codecs,
      call.provider,
      503,
      "the proxy could not check this session's image budget, so the call is not answered (retry)",
    );
  }
}

/**
 * The version a call ends under: pinned by its header, else the trainer's as stored now
 * (control/shared-state.ts). A store that cannot say leaves this proxy's last known one, noted on
 * the capture: the call itself was answered and must not fail for it.
 */
export async function versionNow(
  g: Gateway,
  pinned: string | null,
): Promise<{ version: string | null; note: string | null }> {
  if (pinned !== null || !g.runtime) return { version: pinned ?? g.policyVersion.get(), note: null };
  try {
    await g.runtime.refreshVersion();
    return { version: g.policyVersion.get(), note: null };
  } catch (err) {
    g.log((err as Error).message);
    return {
      version: g.policyVersion.get(),
      note: "the trainer's version at the end of the call could not be read from the store; policy_version_end is the last one this proxy read",
    };
  }
}

/** Null when the capture is stored; else the 503 the client must get. */
async function store(g: Gateway, facts: CaptureFacts): Promise<Response | null> {
  const record = buildCaptureRecord(facts);
  g.fairShare.charge(facts.identity, costOfCall(record, requestBytes(facts)));
  if (record.tito) g.metrics.tito(record.tito);
  try {
    await writeCapture(g.store, record, {
      ...g.captureRetry,
      log: g.log,
      gzip: g.gzip,
      requestJson: facts.requestJson,
    });
    if (record.tito && record.error === null) g.tito.cache.set(sessionKey(facts.identity), record);
    return null;
  } catch (err) {
    const why = err instanceof CaptureWriteError ? err.message : String(err);
    g.log(`capture lost for session ${facts.identity.sessionId}: ${why}`);
    return providerError(
      g.codecs,
      facts.provider,
      503,
      // `why` names the store and key: the log has it, the client gets no internal location.
      "the proxy could not store this call's capture, so it is not answered (retry)",
    );
  }
}

/** Counted and logged, never fatal: the client still gets its answer, the capture is kept untrainable. */
function noteMissingIds(g: Gateway, facts: CaptureFacts, reading: EngineReading): void {
  g.metrics.captured(g.engine.name, facts.provider);
  const noPrompt = reading.promptTokenIds === null;
  const noResponse = reading.responseTokenIds === null;
  if (!noPrompt && !noResponse) return;
  const missing = noPrompt && noResponse ? "both" : noPrompt ? "prompt" : "response";
  g.metrics.withoutIds(g.engine.name, facts.provider, missing);
  g.log(
    `capture ${facts.captureId} (session ${facts.identity.sessionId}): the ${g.engine.name} upstream answered without ${missing === "both" ? "prompt and response" : missing} token ids; the call is captured but not trainable (see docs/engines.md)`,
  );
}

/** The client turned parallel tool calls off, in its provider's own way. */
function parallelToolCallsDisabled(
  g: Gateway,
  provider: Provider,
  body: unknown,
  chat: ChatRequest,
): boolean {
  if (!chat.tools || chat.tools.length === 0 || !isObject(body)) return false;
  return g.codecs[provider].parallelToolCallsDisabled(body);
}

function notAChatCompletion(body: Record<string, unknown>): string | null {
  const choices = body.choices;
  if (!Array.isArray(choices) || choices.length === 0) return "upstream answer has no choices[]";
  const first = choices[0];
  if (!isObject(first) || !isObject(first.message))
    return "upstream answer's choices[0].message is not an object";
  return null;
}

function jsonResponse(body: unknown): Response {
  return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
}

function sseResponse(frames: string[]): Response {
  return new Response(frames.join(""), {
    status: 200,
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
  });
}

function withCaptureId(res: Response, captureId: string): Response {
  res.headers.set(CAPTURE_ID_HEADER, captureId);
  return res;
}

import { encodeCaptureWith } from "../shared/capture-codec.ts";
import type { GzipFn } from "../shared/encoding/gzip.ts";
import { externalizeImages, type ImageBlob } from "../shared/images/image-refs.ts";
import { keys } from "../shared/keys.ts";
import type { CaptureRecord, CaptureSampling, Provider, StreamStatus } from "../shared/schemas/capture.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import type { TokenChannel } from "../shared/token-channels.ts";
import { recordedBody } from "../shared/upstream-request.ts";
import type { SessionIdentity } from "./auth.ts";
import { type EngineReading, isObject } from "./engines/engine.ts";
import type { EngineVersionOutcome, EngineVersionSpan } from "./engines/weight-version.ts";
import { isKnownBlob, rememberBlob } from "./images/known-blobs.ts";

export interface CaptureFacts {
  captureId: string;
  identity: SessionIdentity;
  provider: Provider;
  path: string;
  stream: boolean;
  modelRequested: string | null;
  request: unknown;
  /** `request` as the JSON bytes the client sent, when in hand. */
  requestJson?: Uint8Array;
  chatRequest: unknown;
  /** A token prompt posted instead of `chatRequest` (token-in-token-out), as sent. */
  upstreamRequest?: { channel: TokenChannel; body: Record<string, unknown> } | null;
  startedAt: number;
  endedAt: number;
  /** Present when the upstream answered with a chat completion. */
  reading: EngineReading | null;
  /** Version when the call started, and when its answer ended (they differ across a weight update). */
  policyVersion: string | null;
  policyVersionEnd: string | null;
  /** Set when the engine named the versions (else they are the proxy's). */
  versionFromEngine?: boolean;
  /** Who named the proxy's version when the engine did not (admin.ts `VersionSetter`); default `proxy`. */
  versionSetBy?: "proxy" | "trainer";
  /** Why an engine that reports versions did not name this call's, or why no version is known. */
  versionNote?: string | null;
  sampling: CaptureSampling | null;
  parallelToolCallsDisabled: boolean;
  /** Token-in-token-out outcome and parent (docs/tito.md); absent when the mode is off. */
  tito?: { outcome: string; parentCaptureId: string | null } | null;
  /** The engine replica that answered (its configured base URL); null when none did. */
  replica?: string | null;
  error: { status: number; message: string } | null;
  /** Live streams only; default `complete`. */
  streamStatus?: StreamStatus;
}

/** The engine's own versions win over the proxy's: they name the weights that actually sampled. */
export function stampEngineVersions(f: CaptureFacts, span: EngineVersionSpan | null): void {
  if (span === null) return;
  f.policyVersion = span.start;
  f.policyVersionEnd = span.end;
  f.versionFromEngine = true;
  f.versionNote = null;
}

/**
 * The engine's `/weight_info` reads around the call: its versions, or (a read failed) the reason,
 * leaving the trainer's or proxy's version in place: the capture says which and why, never a guess.
 */
export function stampEngineRead(f: CaptureFacts, outcome: EngineVersionOutcome): void {
  if (outcome.span) stampEngineVersions(f, outcome.span);
  else if (outcome.failure !== null) f.versionNote = `the engine's /weight_info read ${outcome.failure}`;
}

/** Versions the engine put in its answer (SGLang), first token to last; null when it named none. */
export function versionsInAnswer(reading: EngineReading): EngineVersionSpan | null {
  if (reading.policyVersion === null) return null;
  return { start: reading.policyVersionFirst ?? reading.policyVersion, end: reading.policyVersion };
}

/** The size of the client's request as read (what a failed call is charged by: fair-share/). */
export function requestBytes(f: CaptureFacts): number {
  if (f.requestJson) return f.requestJson.byteLength;
  return JSON.stringify(f.request)?.length ?? 0;
}

export function buildCaptureRecord(f: CaptureFacts): CaptureRecord {
  const response = f.reading?.forCapture ?? null;
  const choice = response && Array.isArray(response.choices) ? response.choices[0] : undefined;
  const finish = isObject(choice) && typeof choice.finish_reason === "string" ? choice.finish_reason : null;
  return {
    v: 1,
    capture_id: f.captureId,
    session_id: f.identity.sessionId,
    task_id: f.identity.taskId,
    attempt: f.identity.attempt,
    started_at: new Date(f.startedAt).toISOString(),
    ended_at: new Date(f.endedAt).toISOString(),
    provider: f.provider,
    path: f.path,
    stream: f.stream,
    model_requested: f.modelRequested,
    model_served: response && typeof response.model === "string" ? response.model : null,
    request: f.request,
    chat_request: f.chatRequest,
    upstream_request: f.upstreamRequest
      ? {
          token_channel: f.upstreamRequest.channel,
          body: recordedBody(
            f.upstreamRequest.channel,
            f.upstreamRequest.body,
            f.reading?.promptTokenIds ?? null,
          ),
        }
      : null,
    response,
    prompt_token_ids: f.reading?.promptTokenIds ?? null,
    response_token_ids: f.reading?.responseTokenIds ?? null,
    response_logprobs: f.reading?.responseLogprobs ?? null,
    finish_reason: finish,
    usage: usageOf(response?.usage),
    policy_version: f.policyVersion,
    policy_version_end: f.policyVersionEnd,
    policy_version_source: f.versionFromEngine
      ? "engine"
      : f.policyVersion !== null || f.policyVersionEnd !== null
        ? (f.versionSetBy ?? "proxy")
        : null,
    ...(f.versionNote ? { policy_version_note: f.versionNote } : {}),
    sampling: f.sampling,
    parallel_tool_calls_disabled: f.parallelToolCallsDisabled,
    stream_status: f.streamStatus ?? "complete",
    tito: f.tito?.outcome ?? null,
    parent_capture_id: f.tito?.parentCaptureId ?? null,
    replica: f.replica ?? null,
    error: f.error,
  };
}

/** Usage only when the engine's numbers fit the record; a malformed usage must not cost the capture. */
function usageOf(u: unknown): CaptureRecord["usage"] {
  if (!isObject(u)) return null;
  const count = (x: unknown) => typeof x === "number" && Number.isInteger(x) && x >= 0;
  if (!count(u.prompt_tokens) || !count(u.completion_tokens)) return null;
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  return {
    prompt_tokens: u.prompt_tokens as number,
    completion_tokens: u.completion_tokens as number,
    ...(count(details.cached_tokens) ? { cached_tokens: details.cached_tokens as number } : {}),
  };
}

export interface CaptureWriteOptions {
  /** Total tries, first one included. Default 3. */
  attempts?: number;
  /** Wait before retry i (1-based) is baseDelayMs * 4^(i-1). Default 100 ms. */
  baseDelayMs?: number;
  log: (message: string) => void;
  /** Capture compressor (gzip format); default CompressionStream. */
  gzip?: GzipFn;
  /** The record's `request` as the JSON bytes it was parsed from (see `encodeCapture`). */
  requestJson?: Uint8Array;
}

/** The capture could not be stored: the client must get a 5xx so the harness retries the call. */
export class CaptureWriteError extends Error {}

export function captureKey(rec: CaptureRecord): string {
  return keys.capture(rec.task_id, rec.session_id, rec.capture_id);
}

/**
 * Stores the call's images once each (shared/images/image-refs.ts), then the record that points at
 * them, each put with backoff: a record is never written before its images. A failed call (the
 * engine or routing refused it, `error` set) keeps no images: they stand as placeholders without
 * `image_refs` and no blob is written, so a call that was not answered adds only its record.
 * Resolves to the record's key; throws CaptureWriteError.
 */
export async function writeCapture(
  store: ObjectStore,
  rec: CaptureRecord,
  opts: CaptureWriteOptions,
): Promise<string> {
  const key = captureKey(rec);
  let bytes: Uint8Array;
  let blobs: ImageBlob[];
  try {
    // A failed call keeps no images (image-refs.ts): it was not answered, so it is never trained on.
    const out = await externalizeImages(rec, { keep: rec.error === null });
    blobs = out.blobs;
    // The raw body still holds the images: the request is serialized again, with placeholders.
    const requestJson = out.record.request === rec.request ? opts.requestJson : undefined;
    bytes = await encodeCaptureWith(out.record, { gzip: opts.gzip, requestJson });
  } catch (err) {
    opts.log(`capture ${key}: could not encode the record: ${message(err)}`);
    throw new CaptureWriteError(`capture could not be encoded: ${message(err)}`);
  }
  for (const blob of blobs) {
    if (isKnownBlob(store, blob.sha256)) continue;
    const blobKey = keys.imageBlob(blob.sha256);
    await withRetries(store, blobKey, opts, () =>
      store.putIfAbsent(blobKey, blob.bytes, { contentType: blob.mediaType }),
    );
    rememberBlob(store, blob.sha256);
  }
  await withRetries(store, key, opts, () =>
    store.put(key, bytes, { contentType: "application/json", contentEncoding: "gzip" }),
  );
  return key;
}

async function withRetries(
  store: ObjectStore,
  key: string,
  opts: CaptureWriteOptions,
  put: () => Promise<unknown>,
): Promise<void> {
  const attempts = Math.max(1, opts.attempts ?? 3);
  const base = opts.baseDelayMs ?? 100;
  for (let i = 1; ; i++) {
    try {
      await put();
      return;
    } catch (err) {
      opts.log(`capture ${key}: write ${i}/${attempts} to ${store.url} failed: ${message(err)}`);
      if (i >= attempts) {
        throw new CaptureWriteError(
          `the capture store ${store.url} failed ${attempts} times: ${message(err)}`,
        );
      }
      await new Promise((r) => setTimeout(r, base * 4 ** (i - 1)));
    }
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

import { UPSTREAM_SESSION_HEADER } from "../../shared/upstream-session.ts";
import {
  buildCaptureRecord,
  type CaptureFacts,
  CaptureWriteError,
  requestBytes,
  stampEngineRead,
  stampEngineVersions,
  versionsInAnswer,
  writeCapture,
} from "../capture.ts";
import type { ChatRequest } from "../chat/types.ts";
import type { DecodedRequest, ProviderCodec } from "../codecs/codec.ts";
import type { Gateway } from "../deps.ts";
import { clientAskedLogprobs, isObject } from "../engines/engine.ts";
import type { EngineVersionRead } from "../engines/weight-version.ts";
import { costOfCall } from "../fair-share/session-limiter.ts";
import { providerError } from "../provider-error.ts";
import {
  DEFAULT_UPSTREAM_TIMEOUT_MS,
  describeUpstreamError,
  type StreamedAnswer,
  type Upstream,
  type UpstreamResult,
  upstreamErrorMessage,
  upstreamRoot,
} from "../upstream.ts";
import type { StreamEncoder } from "./chat-delta.ts";
import { ChatDeltaAccumulator } from "./chat-delta-accumulator.ts";
import { openEngineStream } from "./engine-stream.ts";
import { SseParser } from "./upstream-sse.ts";

export interface LiveCall {
  codec: ProviderCodec;
  decoded: DecodedRequest;
  /** The engine's request (token flags set); streamed here with usage asked for. */
  chatRequest: ChatRequest;
  /** Everything but the reading; `endedAt`, `reading`, `error` and `streamStatus` are filled in here. */
  facts: CaptureFacts;
  startedAt: number;
  captureIdHeader: string;
  /** The engine replica the stream holds until it ends; `release` hands it back (routing). */
  upstream: Upstream;
  release(outcome: "ok" | "failed"): void;
  /** Counts and logs a capture whose engine answer lacked ids (shared with the non-streamed path). */
  noteMissingIds(facts: CaptureFacts): void;
  /** The engine's weight version read before the stream started (engines/weight-version.ts), or why not. */
  engineVersionStart: EngineVersionRead;
  /** The proxy's policy version now (pinned by the call's header, else the trainer's as stored), with a note if unread. */
  proxyVersionNow(): Promise<{ version: string | null; note: string | null }>;
}

const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
/** A backlog the client left waiting goes out in writes of about this many characters. */
const WRITE_CHARS = 64 * 1024;

/**
 * A client stream answered as the engine samples it. The engine is called with `stream: true` and
 * the token flags; each upstream chunk becomes chat deltas (ChatDeltaAccumulator), each delta the
 * provider's frames (its StreamEncoder), sent at once. At the end the capture is assembled from the
 * chunks and stored before the provider's terminal event; if the store fails the stream ends with the
 * provider's error event instead. A client that goes away aborts the upstream call (freeing the
 * engine's slot) and leaves an `aborted` capture of what was generated so far.
 *
 * The engine is read at its own pace whatever the client does: a client slower than the engine
 * leaves the chunks' deltas waiting (the text and logprobs the capture holds anyway), encoded when
 * it reads again. So the answer's end is seen when the engine finishes, and the version it ended
 * under is read then, not when the client gets round to the last frame (issue 41, item 16).
 */
export async function streamLive(
  g: Gateway,
  call: LiveCall,
): Promise<Response | { notStreamed: UpstreamResult }> {
  let released = false;
  const release = (outcome: "ok" | "failed") => {
    if (!released) call.release(outcome);
    released = true;
  };
  try {
    const answer = await stream(g, call, release);
    if (!(answer instanceof Response)) release("ok");
    return answer;
  } catch (err) {
    release("ok");
    throw err;
  }
}

async function stream(
  g: Gateway,
  call: LiveCall,
  release: (outcome: "ok" | "failed") => void,
): Promise<Response | { notStreamed: UpstreamResult }> {
  const { facts, decoded } = call;
  const up = call.upstream;
  const flushMs = g.streamFlushMs;
  const fail = (status: number, message: string) => {
    const res = providerError(g.codecs, facts.provider, status, message);
    res.headers.set(call.captureIdHeader, facts.captureId);
    return res;
  };
  const body = { ...call.chatRequest, stream: true, stream_options: { include_usage: true } };
  facts.chatRequest = body;
  const abort = new AbortController();
  const timeoutMs = up.timeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS;
  const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(timeoutMs)]);
  // The cause (an address, a socket error) goes to the log only: clients never see internal URLs.
  const failure = (err: unknown) => {
    if (signal.aborted && !abort.signal.aborted) {
      return { status: 504, message: `upstream did not finish within ${timeoutMs} ms` };
    }
    g.log(
      `upstream stream to ${upstreamRoot(up.baseUrl)} failed for session ${facts.identity.sessionId}: ${describeUpstreamError(err)}`,
    );
    return { status: 502, message: "upstream stream failed" };
  };

  /** Stores the capture; on a store failure returns the reason instead of throwing. */
  const store = async (): Promise<string | null> => {
    facts.endedAt = g.clock();
    const end = await call.proxyVersionNow();
    facts.policyVersionEnd = end.version;
    if (end.note) facts.versionNote = end.note;
    stampEngineRead(facts, await g.engineVersions.end(up, call.engineVersionStart));
    const record = buildCaptureRecord(facts);
    g.fairShare.charge(facts.identity, costOfCall(record, requestBytes(facts)));
    // Counted as generate.ts counts the other calls: a live stream's outcome is no less an outcome.
    if (record.tito) g.metrics.tito(record.tito);
    try {
      await writeCapture(g.store, record, {
        ...g.captureRetry,
        log: g.log,
        gzip: g.gzip,
        requestJson: facts.requestJson,
      });
      return null;
    } catch (err) {
      const why = err instanceof CaptureWriteError ? err.message : String(err);
      g.log(`capture lost for session ${facts.identity.sessionId}: ${why}`);
      return why;
    }
  };
  /** An error answered before any stream byte: stored, then the provider's error response. */
  const failEarly = async (status: number, message: string): Promise<Response> => {
    release("ok");
    facts.error = { status, message };
    const lost = await store();
    return lost === null
      ? fail(status, message)
      : fail(503, "the proxy could not store this call's capture, so it is not answered (retry)");
  };

  let answer: StreamedAnswer;
  try {
    answer = await openEngineStream(up, `${upstreamRoot(up.baseUrl)}/v1/chat/completions`, {
      method: "POST",
      headers: {
        [UPSTREAM_SESSION_HEADER]: facts.identity.sessionId,
        "content-type": "application/json",
        accept: "text/event-stream",
      },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    const { status, message } = failure(err);
    release(status === 502 ? "failed" : "ok");
    return failEarly(status, message.replace("stream failed", "unreachable"));
  }
  if (answer.status < 200 || answer.status >= 300) {
    const text = await answer.text().catch(() => "");
    // An upstream auth failure or redirect is the proxy's configuration problem, not the client's.
    const status =
      answer.status === 401 || answer.status === 403 || answer.status < 400 ? 502 : answer.status;
    return failEarly(status, `upstream answered ${answer.status}: ${upstreamErrorMessage(text)}`);
  }

  if (!answer.contentType.includes("text/event-stream")) {
    // An engine (or a stand-in) that ignores `stream` answers JSON: the caller synthesizes from it.
    const text = await answer.text();
    facts.chatRequest = call.chatRequest;
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed)) return { notStreamed: { ok: true, status: answer.status, body: parsed } };
    } catch {
      // fall through
    }
    return {
      notStreamed: {
        ok: false,
        status: 502,
        message: "upstream answered a stream request with neither a stream nor a JSON object",
      },
    };
  }

  const acc = new ChatDeltaAccumulator();
  const encoder: StreamEncoder = call.codec.streamEncoder({
    decoded,
    now: Math.floor(call.startedAt / 1000),
  });
  const utf8 = new TextEncoder();
  // The engine's body is pushed to us (no promise per chunk); these say where the answer stands.
  // "head": before the first chunk, which decides between an error response and a stream (it carries
  // the id and prompt ids); "streaming": frames go to the client; "over": the answer ended, broke
  // off or the client left, and the capture is being (or was) stored.
  let phase: "head" | "streaming" | "over" = "head";
  type Ending = { kind: "end" } | { kind: "break"; status: number; message: string };
  let opened: (ending: Ending | null) => void = () => {};
  const firstChunk = new Promise<Ending | null>((resolve) => {
    opened = resolve;
  });
  let ctl: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** An ending that came before the client's stream existed; its `start` runs it. */
  let deferred: Ending | null = null;

  const readingNow = () => {
    const reading = g.engine.readResponse(acc.toChatResponse() as never, clientAskedLogprobs(decoded.chat));
    facts.reading = reading;
    stampEngineVersions(facts, versionsInAnswer(reading));
    return reading;
  };
  // What the client has not been sent yet, in order: one entry per engine chunk (its deltas) and
  // the closing frames, encoded only when written. Each write to the client costs a syscall and a
  // pass through the HTTP stack, and an engine sends a chunk per token, so what comes within
  // `flushMs` of the last write waits for a timer and goes out together (docs/proxy.md). A client
  // that does not read leaves the backlog here, never the engine waiting.
  let backlog: (() => string[])[] = [];
  /** Entries of `backlog` already written. */
  let written = 0;
  /** The closing frames are in the backlog: the client's stream closes once they are written. */
  let closing = false;
  let closed = false;
  /** An enqueue may call `pull` (and so `drain`) before it returns: one drain at a time. */
  let draining = false;
  let lastFlush = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waiting = () => backlog.length - written;
  /** Writes the backlog while the client takes it, in writes of about WRITE_CHARS. */
  const drain = (c: ReadableStreamDefaultController<Uint8Array>) => {
    clearTimeout(timer);
    timer = undefined;
    if (closed || draining) return;
    draining = true;
    try {
      while (waiting() > 0 && (c.desiredSize ?? 1) > 0) {
        const frames: string[] = [];
        let chars = 0;
        while (waiting() > 0 && chars < WRITE_CHARS) {
          for (const f of backlog[written++]()) {
            frames.push(f);
            chars += f.length;
          }
        }
        lastFlush = performance.now();
        if (frames.length > 0) c.enqueue(utf8.encode(frames.length === 1 ? frames[0] : frames.join("")));
      }
    } catch (err) {
      // An encoder that throws (a codec bug) ends the client's stream; the engine's answer is
      // still captured, as aborted with the error, if it has not ended yet.
      closed = true;
      g.log(
        `capture ${facts.captureId}: the ${facts.provider} stream encoder threw: ${(err as Error).stack ?? err}`,
      );
      c.error(err);
      if (phase === "streaming")
        finishWith({ kind: "break", status: 500, message: "the proxy could not encode the answer" });
      return;
    } finally {
      draining = false;
    }
    // What was written is let go (the capture keeps its own copy of the answer).
    if (written === backlog.length || written > 4096) {
      backlog = backlog.slice(written);
      written = 0;
    }
    if (closing && waiting() === 0) {
      closed = true;
      c.close();
    }
  };
  /** Writes now if the interval is over, else makes sure a timer will. */
  const flushSoon = (c: ReadableStreamDefaultController<Uint8Array>) => {
    const wait = lastFlush + flushMs - performance.now();
    if (wait <= 0) return drain(c);
    timer ??= setTimeout(() => {
      timer = undefined;
      if (!abort.signal.aborted) drain(c);
    }, wait);
  };
  /** The last frames: written after everything before them, then the client's stream closes. */
  const close = (c: ReadableStreamDefaultController<Uint8Array>, last: () => string[]) => {
    backlog.push(last);
    closing = true;
    drain(c);
  };
  /** The upstream broke mid-answer: store what came (aborted, with the error), then the provider's error event. */
  const breakOff = async (
    c: ReadableStreamDefaultController<Uint8Array>,
    status: number,
    message: string,
  ) => {
    readingNow();
    facts.error = { status, message };
    facts.streamStatus = "aborted";
    await store();
    release("ok");
    close(c, () => encoder.error(status, message));
  };
  const end = async (c: ReadableStreamDefaultController<Uint8Array>) => {
    release("ok");
    const reading = readingNow();
    const ids = acc.idsComplete();
    if (!ids.complete) {
      facts.streamStatus = "ids_incomplete";
      g.log(
        `capture ${facts.captureId} (session ${facts.identity.sessionId}): ${ids.why}; stored as ids_incomplete, not trainable`,
      );
    }
    call.noteMissingIds(facts);
    backlog.push(() => encoder.finish(reading.forClient));
    // The engine has just finished: the capture (and the version it ended under) is taken now,
    // however much of the answer the client has read.
    const lost = await store();
    close(c, () =>
      lost === null
        ? encoder.terminal()
        : encoder.error(503, "the proxy could not store this call's capture, so the answer is void (retry)"),
    );
  };
  const run = (c: ReadableStreamDefaultController<Uint8Array>, ending: Ending) => {
    const done = ending.kind === "end" ? end(c) : breakOff(c, ending.status, ending.message);
    done.catch((err: unknown) => c.error(err));
  };
  const finishWith = (ending: Ending) => {
    if (phase === "head") {
      phase = "over";
      opened(ending);
    } else if (phase === "streaming") {
      phase = "over";
      if (ctl) run(ctl, ending);
      else deferred = ending;
    }
  };
  const onEvent = (data: string) => {
    if (phase === "over") return;
    if (data === "[DONE]") return finishWith({ kind: "end" });
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return finishWith({
        kind: "break",
        status: 502,
        message: "upstream sent a stream record that is not JSON",
      });
    }
    if (!isObject(chunk)) return;
    // vLLM reports a failure inside the stream as a record holding `error`.
    if (isObject(chunk.error)) {
      const message = `upstream stream error: ${upstreamErrorMessage(JSON.stringify(chunk))}`;
      return finishWith({ kind: "break", status: 502, message });
    }
    const deltas = acc.push(chunk);
    // The first chunk names the answer and carries the prompt ids: the encoder's head comes from it.
    const head = phase === "head" ? acc.head() : null;
    backlog.push(() => {
      const frames = head ? encoder.start(head) : [];
      for (const d of deltas) for (const f of encoder.delta(d)) frames.push(f);
      if (encoder.release) for (const f of encoder.release()) frames.push(f);
      return frames;
    });
    if (phase === "head") {
      phase = "streaming";
      opened(null);
    }
  };
  const parser = new SseParser(onEvent);
  const broke = (err: unknown) => {
    if (phase === "over" || abort.signal.aborted) return; // the client left; cancel() stores the capture
    const { status, message } = failure(err);
    finishWith({ kind: "break", status, message });
  };
  // These run inside the body's event callbacks, where a throw would not reach this call's caller:
  // whatever goes wrong ends the answer like an upstream failure, its capture stored.
  answer.read({
    data(text) {
      try {
        parser.push(text);
        // Decided once per read, after all the events it brought.
        if (phase === "streaming" && ctl && waiting() > 0) flushSoon(ctl);
      } catch (err) {
        broke(err);
      }
    },
    end() {
      try {
        parser.end();
        finishWith({ kind: "end" });
      } catch (err) {
        broke(err);
      }
    },
    error: broke,
  });

  const ending = await firstChunk;
  if (ending !== null) {
    return failEarly(
      ending.kind === "end" ? 502 : ending.status,
      ending.kind === "end" ? "upstream closed the stream without an answer" : ending.message,
    );
  }

  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
      // The first frames go out at once: the interval never delays the first byte.
      drain(c);
      if (deferred) run(c, deferred);
    },
    pull(c) {
      // The client read: what waited for it goes out now.
      if (waiting() > 0) drain(c);
    },
    async cancel() {
      abort.abort();
      clearTimeout(timer);
      closed = true;
      release("ok");
      if (phase === "over") return;
      phase = "over";
      readingNow();
      facts.streamStatus = "aborted";
      g.log(
        `capture ${facts.captureId} (session ${facts.identity.sessionId}): the client left mid-stream; upstream aborted, partial capture stored as aborted`,
      );
      await store();
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { ...SSE_HEADERS, [call.captureIdHeader]: facts.captureId },
  });
}

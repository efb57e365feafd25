/** The inference server behind the proxy, reached over a fetch the host injects (pooled on Node). */
export interface Upstream {
  /** e.g. `http://127.0.0.1:8000` (a trailing `/v1` is accepted and ignored). */
  baseUrl: string;
  fetch: typeof fetch;
  /** Per-call deadline; a generation that outlives it is answered 504. Default 10 minutes. */
  timeoutMs?: number;
  /** Where failures are logged with the upstream's address (client messages never carry it). */
  log?: (message: string) => void;
  /**
   * Optional faster path for the whole exchange (the Node adapter uses undici's `request`, which
   * skips the WHATWG Request/Response and stream objects `fetch` builds per call). Throws like
   * fetch does; must honour `signal`.
   */
  send?: (url: string, init: SendInit) => Promise<{ status: number; text: string }>;
  /**
   * Optional push-based stream for live streaming (the Node adapter: undici's `request`, its body
   * read with 'data' events): no WHATWG stream and no promise per engine chunk, which `fetch`'s body
   * costs (BENCHMARKS.md, live streaming). Without it the stream is read through `fetch`.
   */
  stream?: (url: string, init: SendInit) => Promise<StreamedAnswer>;
}

/** Receives an engine's streamed body as UTF-8 text, piece by piece as it arrives. */
export interface TextSink {
  data(text: string): void;
  end(): void;
  error(err: unknown): void;
}

/**
 * The engine's answer to a streamed request. Its body is either read whole (`text`: an error, or a
 * JSON answer from an engine that ignored `stream`) or pushed to a sink as it arrives (`read`), once.
 */
export interface StreamedAnswer {
  status: number;
  /** The `content-type` header ("" when absent). */
  contentType: string;
  text(): Promise<string>;
  /** The body is read as fast as it comes, whatever the client does (stream/live-generate.ts). */
  read(sink: TextSink): void;
}

export interface SendInit {
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export const DEFAULT_UPSTREAM_TIMEOUT_MS = 600_000;

export type UpstreamResult =
  | { ok: true; status: number; body: Record<string, unknown> }
  | { ok: false; status: number; message: string };

/** Root of the server: vLLM serves `/tokenize` there, and Chat Completions under `/v1`. */
export function upstreamRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/** `headers`: extra request headers (the session header, shared/upstream-session.ts). */
export function postJson(
  up: Upstream,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<UpstreamResult> {
  return call(up, path, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  });
}

export function getJson(up: Upstream, path: string): Promise<UpstreamResult> {
  return call(up, path, { method: "GET", headers: { accept: "application/json" } });
}

async function call(up: Upstream, path: string, init: Omit<SendInit, "signal">): Promise<UpstreamResult> {
  const url = upstreamRoot(up.baseUrl) + path;
  const timeoutMs = up.timeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  // Client-facing messages name the path only; the upstream's address goes to the log.
  const failed = (status: number, message: string, detail = message): UpstreamResult => {
    up.log?.(`upstream ${url}: ${detail}`);
    return { ok: false, status, message };
  };
  let res: { ok: boolean; status: number };
  let text: string;
  try {
    if (up.send) {
      const answer = await up.send(url, { ...init, signal });
      res = { ok: answer.status >= 200 && answer.status < 300, status: answer.status };
      text = answer.text;
    } else {
      // A redirect is an answer to report, never a second request to wherever it points.
      const r = await up.fetch(url, { ...init, signal, redirect: "manual" });
      res = r;
      // One read of the body: the ~125 KB answer with 12k prompt ids is parsed exactly once below.
      text = await r.text();
    }
  } catch (err) {
    const timedOut =
      signal.aborted || (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"));
    if (timedOut) return failed(504, `the upstream did not answer ${path} within ${timeoutMs} ms`);
    return failed(
      502,
      `the upstream is unreachable for ${path}`,
      `unreachable: ${describeUpstreamError(err)}`,
    );
  }
  if (!res.ok) {
    if (refusedTheProxy(res.status)) {
      // The proxy's own access to the engine is broken (credentials, a gateway's login redirect):
      // the client's request is fine, and the upstream's body may describe internal systems.
      return failed(
        502,
        `the upstream refused the proxy's request to ${path} (HTTP ${res.status}); the operator must fix the proxy's access to the inference server`,
        `answered ${res.status}: ${upstreamErrorMessage(text)}`,
      );
    }
    return failed(res.status, `upstream answered ${res.status}: ${upstreamErrorMessage(text)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return failed(502, `the upstream answered ${path} with ${res.status} and a body that is not JSON`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return failed(502, `the upstream answered ${path} with JSON that is not an object`);
  }
  return { ok: true, status: res.status, body: parsed as Record<string, unknown> };
}

/** Statuses about the proxy's own standing with the upstream, not about the client's request. */
function refusedTheProxy(status: number): boolean {
  return status === 401 || status === 403 || status === 407 || (status >= 300 && status < 400);
}

/** The message inside an upstream error body (OpenAI, FastAPI or plain text), kept short. */
export function upstreamErrorMessage(text: string): string {
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const e = j.error;
    if (e && typeof e === "object" && typeof (e as Record<string, unknown>).message === "string") {
      return (e as Record<string, string>).message;
    }
    if (typeof j.message === "string") return j.message;
    if (typeof j.detail === "string") return j.detail;
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.slice(0, 500) || "(empty body)";
}

/** A network error with its cause (undici puts the real reason there). */
export function describeUpstreamError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
}

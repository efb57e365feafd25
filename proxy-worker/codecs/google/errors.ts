import { delayText, type RateLimit } from "../common/rate-limit.ts";
import { sseFrame } from "../common/sse-frame.ts";

/**
 * HTTP status -> google.rpc canonical status name. 413 has no canonical code of its own: a body too
 * large to accept is a property of the request itself, so it is INVALID_ARGUMENT (as Gemini answers
 * an oversized prompt), not FAILED_PRECONDITION (which means the system is in the wrong state).
 */
const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
  529: "UNAVAILABLE",
};

export function googleStatusName(status: number): string {
  return STATUS_NAMES[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION");
}

export function encodeGoogleError(status: number, message: string) {
  return { error: { code: status, message, status: googleStatusName(status) } };
}

/** An error after the stream started: @google/genai raises a record with an `error` key. */
export function encodeGoogleStreamError(status: number, message: string): string {
  return sseFrame(encodeGoogleError(status, message));
}

/**
 * Google's 429 with a `google.rpc.RetryInfo` detail, as Gemini answers a per-minute quota. Gemini
 * CLI retries a RESOURCE_EXHAUSTED whose RetryInfo asks for at most 5 minutes, after that delay;
 * without one it backs off on its own. No QuotaFailure detail: a daily quota id there makes it stop.
 * Recorded shape: __fixtures__/rate-limit.429.json.
 */
export function encodeGoogleRateLimit(limit: RateLimit) {
  const seconds = Number((limit.retryAfterMs / 1000).toFixed(3));
  return {
    error: {
      code: 429,
      message: `${limit.message}. Please retry in ${delayText(limit.retryAfterMs)}.`,
      status: googleStatusName(429),
      details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${seconds}s` }],
    },
  };
}

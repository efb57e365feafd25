import type { RateLimit } from "../common/rate-limit.ts";
import { sseFrame } from "../common/sse-frame.ts";

/** HTTP status -> Anthropic error type, as the API documents them. */
const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  // An upstream engine that is down or saturated is what Anthropic calls overloaded: clients retry it.
  503: "overloaded_error",
  504: "timeout_error",
  529: "overloaded_error",
};

export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

export function encodeAnthropicError(status: number, message: string) {
  return { type: "error", error: { type: anthropicErrorType(status), message } };
}

/** An error after the stream started: the status line is gone, so the error travels as an event. */
export function encodeAnthropicStreamError(status: number, message: string): string {
  return sseFrame(encodeAnthropicError(status, message), "error");
}

/**
 * Anthropic's 429 (`rate_limit_error`; not 529, which means the service is overloaded): the SDKs and
 * Claude Code wait the `retry-after` header. Recorded shape: __fixtures__/rate-limit.429.json.
 */
export function encodeAnthropicRateLimit(limit: RateLimit) {
  return encodeAnthropicError(429, limit.message);
}

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

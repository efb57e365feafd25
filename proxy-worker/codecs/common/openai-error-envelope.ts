import { delayText, type RateLimit } from "./rate-limit.ts";

/** OpenAI's error `type` for an HTTP status (the SDKs map status to error classes; `type` is for humans and logs). */
function openaiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export interface OpenAIErrorEnvelope {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The error body both OpenAI APIs (Chat Completions and Responses) answer with. */
export function openaiErrorEnvelope(
  status: number,
  message: string,
  param?: string,
  code?: string,
): OpenAIErrorEnvelope {
  return { error: { message, type: openaiErrorType(status), param: param ?? null, code: code ?? null } };
}

/**
 * OpenAI's 429: `type` names the limit (`requests` or `tokens`), `code` is `rate_limit_exceeded`
 * (Codex treats other codes, such as `insufficient_quota`, as final), and the message ends "Please
 * try again in 1.5s." as OpenAI's does: Codex reads its wait from that text, the SDKs from headers.
 * Recorded shape: codecs/openai-chat/__fixtures__/rate-limit.429.json.
 */
export function openaiRateLimitEnvelope(limit: RateLimit): OpenAIErrorEnvelope {
  return {
    error: {
      message: `${limit.message}. Please try again in ${delayText(limit.retryAfterMs)}.`,
      type: limit.kind,
      param: null,
      code: "rate_limit_exceeded",
    },
  };
}

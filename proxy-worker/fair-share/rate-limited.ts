import type { Provider } from "../../shared/schemas/capture.ts";
import { openaiRateLimitEnvelope } from "../codecs/common/openai-error-envelope.ts";
import type { RateLimit } from "../codecs/common/rate-limit.ts";
import type { CodecRegistry } from "../codecs/registry.ts";

/**
 * The openai SDKs honour a wait of at most 60 s and fall back to their own short backoff beyond
 * it; a refusal that needs longer says 60 s and is refused again with the rest of the wait.
 */
export const MAX_RETRY_AFTER_MS = 60_000;
const MIN_RETRY_AFTER_MS = 100;

/**
 * A fair-share refusal: 429 in the client's provider shape, with `retry-after` (whole seconds, at
 * least 1, as HTTP defines it) and `retry-after-ms` (the exact wait; the openai and Anthropic SDKs
 * prefer it), both capped at a minute.
 */
export function rateLimited(codecs: CodecRegistry, provider: Provider, limit: RateLimit): Response {
  const ms = Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_RETRY_AFTER_MS, Math.ceil(limit.retryAfterMs)));
  const capped = { ...limit, retryAfterMs: ms };
  let body: unknown;
  try {
    body = codecs[provider].encodeRateLimit(capped);
  } catch {
    // An error path must not throw: a broken encoder still yields a readable JSON error.
    body = openaiRateLimitEnvelope(capped);
  }
  return new Response(JSON.stringify(body), {
    status: 429,
    headers: {
      "content-type": "application/json",
      "retry-after": String(Math.ceil(ms / 1000)),
      "retry-after-ms": String(ms),
    },
  });
}

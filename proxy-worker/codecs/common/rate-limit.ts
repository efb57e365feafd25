/** What a provider's 429 says: why, which kind of limit, and when to come back. */
export interface RateLimit {
  message: string;
  /** OpenAI's `type` distinguishes request limits from token limits; the others ignore it. */
  kind: "requests" | "tokens";
  retryAfterMs: number;
}

/**
 * The wait as providers write it in their messages ("1.5s", "250ms"): Codex parses OpenAI's
 * "try again in 1.5s" and Gemini CLI Google's "retry in 1.5s" out of the message text.
 */
export function delayText(ms: number): string {
  if (ms < 1000) return `${Math.max(1, Math.ceil(ms))}ms`;
  return `${Number((ms / 1000).toFixed(3))}s`;
}

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { RateLimit } from "../../../proxy-worker/codecs/common/rate-limit.ts";
import { defaultCodecs } from "../../../proxy-worker/codecs/registry.ts";
import { rateLimited } from "../../../proxy-worker/fair-share/rate-limited.ts";
import { PROVIDERS, type Provider } from "../../../shared/schemas/capture.ts";

/**
 * The fair-share 429 of every provider against a real 429 body of that provider
 * (`__fixtures__/rate-limit.429.json` beside each codec, transcribed from the providers' answers
 * as their documentation and public reports show them; ids blanked), and against what the
 * harnesses read from it: the SDKs the `retry-after` headers, Codex the "try again in" text,
 * Gemini CLI the RetryInfo detail.
 */
const FOLDER: Record<Provider, string> = {
  anthropic: "anthropic",
  openai_chat: "openai-chat",
  openai_responses: "openai-responses",
  google: "google",
};

function realBody(provider: Provider): unknown {
  const url = new URL(
    `../../../proxy-worker/codecs/${FOLDER[provider]}/__fixtures__/rate-limit.429.json`,
    import.meta.url,
  );
  return JSON.parse(readFileSync(url, "utf8"));
}

/** Every path of `ours` exists in `real` with the same JSON type; array items are matched by `@type`, else the first. */
function shapeMismatches(ours: unknown, real: unknown, at = "$"): string[] {
  const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
  if (kind(ours) !== kind(real)) return [`${at}: ${kind(ours)} where the provider sends ${kind(real)}`];
  if (Array.isArray(ours) && Array.isArray(real)) {
    return ours.flatMap((item, i) => {
      const tag = (item as Record<string, unknown>)?.["@type"];
      const match =
        tag === undefined ? real[0] : real.find((r) => (r as Record<string, unknown>)?.["@type"] === tag);
      return match === undefined
        ? [`${at}[${i}]: no ${String(tag)} in the provider's body`]
        : shapeMismatches(item, match, `${at}[${i}]`);
    });
  }
  if (kind(ours) === "object") {
    const r = real as Record<string, unknown>;
    return Object.entries(ours as Record<string, unknown>).flatMap(([k, v]) =>
      k in r ? shapeMismatches(v, r[k], `${at}.${k}`) : [`${at}.${k}: not in the provider's body`],
    );
  }
  return [];
}

const LIMIT: RateLimit = {
  message: "session s1 used its 600 tokens per minute",
  kind: "tokens",
  retryAfterMs: 2_500,
};

describe("fair-share 429 bodies", () => {
  for (const provider of PROVIDERS) {
    it(`${provider}: has the real 429's shape`, () => {
      const ours = defaultCodecs[provider].encodeRateLimit(LIMIT);
      const real = realBody(provider);
      expect(shapeMismatches(ours, real)).toEqual([]);
      // The fields a client branches on carry the provider's own values.
      if (provider === "anthropic")
        expect(ours).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
      if (provider === "google")
        expect(ours).toMatchObject({ error: { code: 429, status: "RESOURCE_EXHAUSTED" } });
      if (provider === "openai_chat" || provider === "openai_responses")
        expect(ours).toMatchObject({ error: { type: "tokens", code: "rate_limit_exceeded" } });
    });
  }

  it("OpenAI: Codex reads the wait from the message, as from OpenAI's own", () => {
    // codex-rs/codex-api: `(?i)try again in\s*(\d+(?:\.\d+)?)\s*(s|ms|seconds?)`, from the 0.169 binary.
    const codexWait = (message: string) => {
      const m = /try again in\s*(\d+(?:\.\d+)?)\s*(s|ms|seconds?)/i.exec(message);
      if (!m) return null;
      return m[2] === "ms" ? Number(m[1]) : Number(m[1]) * 1000;
    };
    expect(codexWait((realBody("openai_chat") as { error: { message: string } }).error.message)).toBe(2024);
    for (const retryAfterMs of [120, 1000, 2500, 60_000]) {
      const body = defaultCodecs.openai_responses.encodeRateLimit({
        ...LIMIT,
        kind: "requests",
        retryAfterMs,
      });
      expect(codexWait((body as { error: { message: string } }).error.message)).toBe(retryAfterMs);
    }
  });

  it("Google: RetryInfo says the wait, and nothing Gemini CLI reads as a final quota", () => {
    const body = defaultCodecs.google.encodeRateLimit(LIMIT) as {
      error: { message: string; details: { "@type": string; retryDelay?: string }[] };
    };
    const retry = body.error.details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.RetryInfo");
    expect(retry?.retryDelay).toBe("2.5s");
    // gemini-cli 0.61 classifyGoogleError: these make a 429 terminal (the CLI stops instead of retrying).
    expect(
      body.error.details.some((d) => d["@type"].endsWith("QuotaFailure") || d["@type"].endsWith("ErrorInfo")),
    ).toBe(false);
    expect(body.error.message).not.toMatch(/limit:\s*0(?!\d|\.\d)/i);
    expect(body.error.message).not.toMatch(
      /exhausted your capacity|capacity exceeded|MODEL_CAPACITY_EXHAUSTED/i,
    );
    expect(body.error.message).toMatch(/Please retry in 2\.5s\.$/);
  });

  it("sends retry-after in whole seconds (1..60) and retry-after-ms, whatever wait was asked", async () => {
    const cases: [number, string, string][] = [
      [1, "1", "100"],
      [1_000, "1", "1000"],
      [1_001, "2", "1001"],
      [48_000, "48", "48000"],
      [3_600_000, "60", "60000"],
    ];
    for (const [asked, seconds, ms] of cases) {
      const res = rateLimited(defaultCodecs, "anthropic", { ...LIMIT, retryAfterMs: asked });
      expect(res.status).toBe(429);
      expect([res.headers.get("retry-after"), res.headers.get("retry-after-ms")]).toEqual([seconds, ms]);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    }
  });
});

import { z } from "zod";
import { Base64Error, base64UrlToBytes, bytesToBase64Url } from "./encoding/base64.ts";
import { isValidId } from "./ids.ts";
import type { SessionLimits } from "./schemas/proxy-limits.ts";
import { AgentSampling } from "./schemas/sampling.ts";

/**
 * Session tokens keep the proxy stateless (docs/architecture.md, "Session tokens"): `payload.signature`,
 * payload = base64url JSON `{sid, tid, exp, att?, smp?, tito?, lim?}` (exp in Unix seconds; `smp` the task's
 * `agent.sampling`, absent in tokens minted without one, so older tokens stay valid; `tito` true
 * for a token-in-token-out task; `lim` the session's limits at the proxy, `{fl?, tpm?}` for calls in
 * flight and tokens per minute), signature =
 * base64url HMAC-SHA256 of the payload string with the signing key. WebCrypto only, so the
 * same code runs in Workers and Node.
 */

export const DEFAULT_TTL_SECONDS = 3600;
/** Longer input is rejected before any crypto work; real tokens are ~150 characters. */
const MAX_TOKEN_LENGTH = 2048;

export interface MintOptions {
  sessionId: string;
  taskId: string;
  /** Attempt of the session (a rerun's captures are kept apart by it). Omitted from the token when 0. */
  attempt?: number;
  /** The task's `agent.sampling`, applied by the proxy to every call of the session. */
  sampling?: AgentSampling | null;
  /** The task's `agent.token_in_token_out`: the proxy splices prompts from captured ids (`tito` claim). */
  tokenInTokenOut?: boolean;
  /** What the proxy lets this session take from the engine (`lim` claim; docs/security.md "Fair share"). */
  limits?: SessionLimits;
  ttlSeconds?: number;
  /** Milliseconds since the epoch, as `Date.now()`. */
  now?: number;
}

export type VerifyResult =
  | {
      ok: true;
      sessionId: string;
      taskId: string;
      attempt: number;
      exp: number;
      /** Present only in tokens minted with a task's `agent.sampling`. */
      sampling?: AgentSampling;
      /** Present (true) only in tokens minted for a token-in-token-out task. */
      tokenInTokenOut?: boolean;
      /** Present only in tokens minted with limits. */
      limits?: SessionLimits;
    }
  | { ok: false; reason: "malformed" | "bad_signature" | "expired" | "invalid_ids" };

const Payload = z.object({
  sid: z.string(),
  tid: z.string(),
  exp: z.number().int(),
  att: z.number().int().nonnegative().optional(),
  smp: AgentSampling.optional(),
  tito: z.literal(true).optional(),
  lim: z
    .strictObject({
      fl: z.number().int().positive().optional(),
      tpm: z.number().int().positive().optional(),
    })
    .optional(),
});

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export async function mintSessionToken(opts: MintOptions, key: string): Promise<string> {
  const { sessionId, taskId, attempt = 0, ttlSeconds = DEFAULT_TTL_SECONDS, now = Date.now() } = opts;
  const sampling = opts.sampling ? AgentSampling.safeParse(opts.sampling) : null;
  if (sampling && !sampling.success) {
    throw new SessionTokenError(
      `sampling is not a valid agent.sampling: ${sampling.error.issues[0]?.message}`,
    );
  }
  if (!isValidId(sessionId))
    throw new SessionTokenError(`sessionId ${JSON.stringify(sessionId)} is not a valid id`);
  if (!isValidId(taskId)) throw new SessionTokenError(`taskId ${JSON.stringify(taskId)} is not a valid id`);
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new SessionTokenError(`attempt must be an integer >= 0, got ${attempt}`);
  }
  if (!Number.isFinite(ttlSeconds) || ttlSeconds <= 0) {
    throw new SessionTokenError(`ttlSeconds must be a positive number, got ${ttlSeconds}`);
  }
  const payload: z.infer<typeof Payload> = {
    sid: sessionId,
    tid: taskId,
    exp: Math.floor(now / 1000 + ttlSeconds),
  };
  if (attempt > 0) payload.att = attempt;
  if (sampling?.success && Object.keys(sampling.data).length > 0) payload.smp = sampling.data;
  if (opts.tokenInTokenOut === true) payload.tito = true;
  const lim = limitsClaim(opts.limits);
  if (lim) payload.lim = lim;
  const encoded = bytesToBase64Url(encoder.encode(JSON.stringify(payload)));
  const signature = await crypto.subtle.sign("HMAC", await hmacKey(key), encoder.encode(encoded));
  return `${encoded}.${bytesToBase64Url(new Uint8Array(signature))}`;
}

/** Never throws for any token string; throws `SessionTokenError` only for an empty key. */
export async function verifySessionToken(
  token: string,
  key: string,
  now = Date.now(),
): Promise<VerifyResult> {
  const cryptoKey = await hmacKey(key);
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: "malformed" };
  const parts = token.split(".");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") return { ok: false, reason: "malformed" };
  const [encoded, encodedSignature] = parts;
  let signature: Uint8Array<ArrayBuffer>;
  try {
    signature = base64UrlToBytes(encodedSignature);
  } catch (err) {
    if (err instanceof Base64Error) return { ok: false, reason: "malformed" };
    throw err;
  }
  // Only the canonical spelling is accepted, so one signature has exactly one token string.
  // (Comparing against our own re-encoding of the caller's bytes involves no secret.)
  if (bytesToBase64Url(signature) !== encodedSignature) return { ok: false, reason: "malformed" };
  // crypto.subtle.verify compares in constant time; never compare signatures as strings.
  const valid = await crypto.subtle.verify("HMAC", cryptoKey, signature, encoder.encode(encoded));
  if (!valid) return { ok: false, reason: "bad_signature" };
  const payload = parsePayload(encoded);
  if (!payload) return { ok: false, reason: "malformed" };
  if (!isValidId(payload.sid) || !isValidId(payload.tid)) return { ok: false, reason: "invalid_ids" };
  if (payload.exp * 1000 <= now) return { ok: false, reason: "expired" };
  return {
    ok: true,
    sessionId: payload.sid,
    taskId: payload.tid,
    attempt: payload.att ?? 0,
    exp: payload.exp,
    ...(payload.smp ? { sampling: payload.smp } : {}),
    ...(payload.tito ? { tokenInTokenOut: true } : {}),
    ...(payload.lim && Object.keys(payload.lim).length > 0
      ? {
          limits: {
            ...(payload.lim.fl !== undefined ? { maxInFlight: payload.lim.fl } : {}),
            ...(payload.lim.tpm !== undefined ? { tokensPerMinute: payload.lim.tpm } : {}),
          },
        }
      : {}),
  };
}

function limitsClaim(limits: SessionLimits | undefined): z.infer<typeof Payload>["lim"] | null {
  if (!limits) return null;
  const claim: NonNullable<z.infer<typeof Payload>["lim"]> = {};
  for (const [name, key, value] of [
    ["maxInFlight", "fl", limits.maxInFlight],
    ["tokensPerMinute", "tpm", limits.tokensPerMinute],
  ] as const) {
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 1) {
      throw new SessionTokenError(`limits.${name} must be an integer >= 1, got ${value}`);
    }
    claim[key] = value;
  }
  return Object.keys(claim).length > 0 ? claim : null;
}

export class SessionTokenError extends Error {}

function parsePayload(encoded: string): z.infer<typeof Payload> | null {
  try {
    const parsed = Payload.safeParse(JSON.parse(decoder.decode(base64UrlToBytes(encoded))));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

// Importing the key costs more than the HMAC itself; the proxy verifies on every request.
const keyCache = new Map<string, Promise<CryptoKey>>();
const KEY_CACHE_LIMIT = 8;

function hmacKey(key: string): Promise<CryptoKey> {
  if (typeof key !== "string" || key.length === 0) {
    throw new SessionTokenError("the signing key is empty: set POLAR_SIGNING_KEY");
  }
  let cached = keyCache.get(key);
  if (!cached) {
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    cached = crypto.subtle.importKey("raw", encoder.encode(key), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
    keyCache.set(key, cached);
  }
  return cached;
}

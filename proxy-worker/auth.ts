import { isValidId } from "../shared/ids.ts";
import type { SessionLimits } from "../shared/schemas/proxy-limits.ts";
import type { AgentSampling } from "../shared/schemas/sampling.ts";
import { verifySessionToken } from "../shared/session-token.ts";

/** Who a model call belongs to: decides where its capture is stored. */
export interface SessionIdentity {
  sessionId: string;
  taskId: string;
  attempt: number;
  /** The task's `agent.sampling` from the token; absent under `--auth off` and in older tokens. */
  sampling?: AgentSampling | null;
  /** The task asked for token-in-token-out (`tito` claim; docs/tito.md). */
  tokenInTokenOut?: boolean;
  /** The session's fair-share limits from the token (`lim` claim); absent: the proxy's defaults. */
  limits?: SessionLimits;
}

export type AuthConfig = { mode: "token"; signingKey: string } | { mode: "off" };

export type AuthResult = { ok: true; identity: SessionIdentity } | { ok: false; message: string };

/** Task id every call gets under `--auth off`, where no token names one. */
export const LOCAL_TASK_ID = "local";
export const ANONYMOUS_SESSION_ID = "anonymous";

/**
 * The key as each SDK sends it: Anthropic `x-api-key`, Google `x-goog-api-key` or `?key=`,
 * OpenAI `Authorization: Bearer`; harnesses that cannot set a key use the `/s/{token}/` path form.
 */
export function extractKey(headers: Headers, query: URLSearchParams, pathToken?: string): string | null {
  if (pathToken) return pathToken;
  const direct = headers.get("x-api-key") ?? headers.get("x-goog-api-key");
  if (direct?.trim()) return direct.trim();
  const authz = headers.get("authorization");
  if (authz) {
    const m = /^Bearer\s+(.+)$/i.exec(authz.trim());
    if (m) return m[1].trim();
  }
  const q = query.get("key");
  return q?.trim() ? q.trim() : null;
}

const REASONS: Record<string, string> = {
  malformed:
    "the API key is not a Polar session token (expected payload.signature, as minted by `polar token`)",
  bad_signature: "the session token's signature does not match this proxy's POLAR_SIGNING_KEY",
  expired: "the session token has expired; mint a new one (`polar token --ttl ...`)",
  invalid_ids: "the session token names a session or task id that is not a valid id",
};

export async function authenticate(
  key: string | null,
  config: AuthConfig,
  nowMs: number,
): Promise<AuthResult> {
  if (config.mode === "off") return { ok: true, identity: await localIdentity(key) };
  if (!key) {
    return {
      ok: false,
      message:
        "missing API key: send the Polar session token as x-api-key, Authorization: Bearer, x-goog-api-key, ?key= or the /s/{token}/ path prefix",
    };
  }
  const known = verifiedTokens(config).get(key);
  if (known && known.expiresAtMs > nowMs) return { ok: true, identity: known.identity };
  let verdict: Awaited<ReturnType<typeof verifySessionToken>>;
  try {
    verdict = await verifySessionToken(key, config.signingKey, nowMs);
  } catch {
    verdict = { ok: false, reason: "malformed" };
  }
  if (!verdict.ok) return { ok: false, message: REASONS[verdict.reason] ?? "invalid session token" };
  const identity: SessionIdentity = {
    sessionId: verdict.sessionId,
    taskId: verdict.taskId,
    attempt: verdict.attempt ?? 0,
    ...(verdict.sampling ? { sampling: verdict.sampling } : {}),
    ...(verdict.tokenInTokenOut ? { tokenInTokenOut: true } : {}),
    ...(verdict.limits ? { limits: verdict.limits } : {}),
  };
  remember(verifiedTokens(config), key, { identity, expiresAtMs: verdict.exp * 1000 });
  return { ok: true, identity };
}

/**
 * Whether `key` is a session token this process has already verified and that has not expired
 * (under `--auth off`, any key is): a check without crypto, for refusing an address's unauthenticated flood without locking out the
 * sessions it also serves (fair-share/address-gate.ts).
 */
export function isVerifiedToken(key: string | null, config: AuthConfig, nowMs: number): boolean {
  if (key === null || config.mode === "off") return config.mode === "off";
  const known = verifiedTokens(config).get(key);
  return known !== undefined && known.expiresAtMs > nowMs;
}

/**
 * Tokens that verified under a config, so a session's calls after the first skip the HMAC (a
 * WebCrypto round trip, ~0.25 ms). Only successes are kept, keyed by the exact token string,
 * and the expiry is checked on every hit; the cache is per config, so a new key starts empty.
 */
interface VerifiedToken {
  identity: SessionIdentity;
  expiresAtMs: number;
}
const MAX_VERIFIED_TOKENS = 10_000;
const verifiedByConfig = new WeakMap<AuthConfig, Map<string, VerifiedToken>>();

function verifiedTokens(config: AuthConfig): Map<string, VerifiedToken> {
  let cache = verifiedByConfig.get(config);
  if (!cache) {
    cache = new Map();
    verifiedByConfig.set(config, cache);
  }
  return cache;
}

function remember(cache: Map<string, VerifiedToken>, token: string, entry: VerifiedToken): void {
  // Crude bound: sessions are many but short-lived, so starting over is cheaper than an LRU.
  if (cache.size >= MAX_VERIFIED_TOKENS) cache.clear();
  cache.set(token, entry);
}

/** `--auth off`: the key itself names the session, so a developer can tell runs apart by key. */
async function localIdentity(key: string | null): Promise<SessionIdentity> {
  if (!key) return { sessionId: ANONYMOUS_SESSION_ID, taskId: LOCAL_TASK_ID, attempt: 0 };
  const sessionId = isValidId(key) ? key : await hashToId(key);
  return { sessionId, taskId: LOCAL_TASK_ID, attempt: 0 };
}

/** A stable id for a key that cannot be a storage key segment (slashes, spaces, too long). */
async function hashToId(key: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
  let hex = "";
  for (const b of digest.subarray(0, 16)) hex += b.toString(16).padStart(2, "0");
  return `key-${hex}`;
}

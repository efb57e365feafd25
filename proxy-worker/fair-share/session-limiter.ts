/**
 * Per-session fair share (docs/security.md, "Fair share at the proxy"): a session may have at most
 * `maxInFlight` model calls in progress and use `tokensPerMinute` tokens, so one session hammering
 * the engine cannot starve the others. The limits come from the session token (`lim` claim, set by
 * the runner from the task's `agent.proxy_limits` and its defaults), else from the proxy's defaults.
 * State lives in this process (one isolate on Workers): see the docs for why that is enough.
 */
import type { SessionLimits } from "../../shared/schemas/proxy-limits.ts";
import type { SessionIdentity } from "../auth.ts";

export type LimitName = "max_in_flight" | "tokens_per_minute";

export type Admission =
  | { ok: true; ticket: Ticket }
  | { ok: false; limit: LimitName; retryAfterMs: number; message: string };

/** An admitted call's slot; `release` is idempotent, so every way a call can end may call it. */
export interface Ticket {
  /** False for a session without an in-flight count: nothing to release, so nothing to wait for. */
  readonly held: boolean;
  release(): void;
}

/** A session over its in-flight limit retries after this: no call's end can be predicted. */
export const IN_FLIGHT_RETRY_MS = 1_000;
const NO_TICKET: Ticket = { held: false, release() {} };
const MINUTE_MS = 60_000;

interface SessionState {
  inFlight: number;
  /** Token bucket: up to one minute's tokens, refilled continuously; negative after a large call. */
  tokens: number;
  refilledAt: number;
  tokensPerMinute: number | undefined;
}

export class SessionLimiter {
  private readonly sessions = new Map<string, SessionState>();
  private sweepAt = 1024;
  private readonly defaults: SessionLimits;
  private readonly clock: () => number;

  constructor(defaults: SessionLimits, clock: () => number) {
    this.defaults = defaults;
    this.clock = clock;
  }

  /** The limits a call of this session gets: its token's, else the proxy's defaults. */
  limitsOf(identity: SessionIdentity): SessionLimits {
    return identity.limits ?? this.defaults;
  }

  admit(identity: SessionIdentity): Admission {
    const limits = this.limitsOf(identity);
    if (limits.maxInFlight === undefined && limits.tokensPerMinute === undefined) {
      return { ok: true, ticket: NO_TICKET };
    }
    const now = this.clock();
    const state = this.stateOf(keyOf(identity), limits.tokensPerMinute, now);
    const who = `session ${identity.sessionId}`;
    if (limits.maxInFlight !== undefined && state.inFlight >= limits.maxInFlight) {
      return {
        ok: false,
        limit: "max_in_flight",
        retryAfterMs: IN_FLIGHT_RETRY_MS,
        message: `${who} already has ${state.inFlight} model calls in progress, its limit (agent.proxy_limits.max_in_flight); wait for one to finish`,
      };
    }
    const tpm = limits.tokensPerMinute;
    if (tpm !== undefined && state.tokens <= 0) {
      // The bucket refills tpm per minute; a call is admitted again once it is above zero.
      const retryAfterMs = Math.ceil(((-state.tokens + 1) * MINUTE_MS) / tpm);
      return {
        ok: false,
        limit: "tokens_per_minute",
        retryAfterMs,
        message: `${who} used its ${tpm} tokens per minute (agent.proxy_limits.tokens_per_minute)`,
      };
    }
    state.inFlight++;
    let released = false;
    return {
      ok: true,
      ticket: {
        held: true,
        release: () => {
          if (released) return;
          released = true;
          state.inFlight--;
        },
      },
    };
  }

  /**
   * Takes a finished call's tokens from its session's bucket. The size of a call is known only
   * after the engine answered, so the bucket may go below zero; the session then waits it off.
   */
  charge(identity: SessionIdentity, tokens: number): void {
    const tpm = this.limitsOf(identity).tokensPerMinute;
    if (tpm === undefined || !(tokens > 0)) return;
    const state = this.stateOf(keyOf(identity), tpm, this.clock());
    state.tokens -= tokens;
  }

  /** Sessions with state (tests, metrics). */
  get size(): number {
    return this.sessions.size;
  }

  private stateOf(key: string, tpm: number | undefined, now: number): SessionState {
    let state = this.sessions.get(key);
    if (!state) {
      if (this.sessions.size >= this.sweepAt) this.sweep(now);
      state = { inFlight: 0, tokens: tpm ?? 0, refilledAt: now, tokensPerMinute: tpm };
      this.sessions.set(key, state);
      return state;
    }
    if (tpm !== undefined) {
      state.tokens = Math.min(tpm, state.tokens + ((now - state.refilledAt) * tpm) / MINUTE_MS);
    }
    state.refilledAt = now;
    state.tokensPerMinute = tpm;
    return state;
  }

  /** Forgets sessions that hold nothing: no call in flight and a full bucket. */
  private sweep(now: number): void {
    for (const [key, s] of this.sessions) {
      const tpm = s.tokensPerMinute;
      const full = tpm === undefined || s.tokens + ((now - s.refilledAt) * tpm) / MINUTE_MS >= tpm;
      if (s.inFlight === 0 && full) this.sessions.delete(key);
    }
    this.sweepAt = Math.max(1024, this.sessions.size * 2);
  }
}

function keyOf(identity: SessionIdentity): string {
  return `${identity.taskId}/${identity.sessionId}/${identity.attempt}`;
}

/** A finished call's size for the token bucket: the engine's usage, else its token ids. */
export function tokensOfCall(record: {
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  prompt_token_ids: ArrayLike<number> | null;
  response_token_ids: ArrayLike<number> | null;
}): number {
  if (record.usage) return record.usage.prompt_tokens + record.usage.completion_tokens;
  return (record.prompt_token_ids?.length ?? 0) + (record.response_token_ids?.length ?? 0);
}

/**
 * Bytes of request a token stands for when no engine counted them: about what BPE tokenizers
 * average on English text and JSON. A request the proxy read, parsed and stored costs that much
 * whether or not the engine then refused it.
 */
export const BYTES_PER_TOKEN = 4;

export function tokensOfBytes(bytes: number): number {
  return bytes > 0 ? Math.ceil(bytes / BYTES_PER_TOKEN) : 0;
}

/**
 * What a stored call takes from its session's bucket. A failed call (the engine refused it, the
 * upstream broke, no replica) costs at least its request's size: it was read, parsed and captured
 * all the same, so refused calls cannot be sent without end (issue 41, item 5).
 */
export function costOfCall(
  record: Parameters<typeof tokensOfCall>[0] & { error: unknown },
  requestBytes: number,
): number {
  const tokens = tokensOfCall(record);
  return record.error === null ? tokens : Math.max(tokens, tokensOfBytes(requestBytes));
}

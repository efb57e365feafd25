/**
 * The per-address limit before authentication (docs/security.md, "Fair share at the proxy"). A
 * request answered 401 or 404 that no credential authenticated counts against its address; once
 * an address has used up its budget, its requests get 429 before any token is verified, except
 * those carrying a session token this process has already verified, so the sessions of a runner
 * node keep working while something on the same address floods the proxy with bad keys.
 */
import type { MiddlewareHandler } from "hono";
import type { Provider } from "../../shared/schemas/capture.ts";
import type { AddressLimiter } from "./address-limiter.ts";

export interface AddressGate {
  limiter: AddressLimiter;
  /** The client's address: the socket's peer on Node, `cf-connecting-ip` on Workers, or a header set by a trusted reverse proxy. */
  addressOf(request: Request, env: unknown): string | null;
  /** A credential already known good, checked without crypto. */
  knownCredential(request: Request): boolean;
  /** The provider shape a refusal of this request is written in. */
  providerOf(request: Request): Provider;
  /** The 429; its body is left unread (the host decides whether to close the connection). */
  refuse(request: Request, provider: Provider, message: string, retryAfterMs: number): Response;
  onRefused(): void;
}

const authenticated = new WeakSet<Request>();

/** The request carried a valid credential (a session token, the control or admin token). */
export function markAuthenticated(request: Request): void {
  authenticated.add(request);
}

export function addressGate(gate: AddressGate): MiddlewareHandler {
  return async (c, next) => {
    const request = c.req.raw;
    const address = gate.addressOf(request, c.env);
    if (address === null) return next();
    const waitMs = gate.limiter.waitMs(address);
    if (waitMs > 0 && !gate.knownCredential(request)) {
      gate.onRefused();
      return gate.refuse(
        request,
        gate.providerOf(request),
        `too many requests without a valid credential from this address (limit ${gate.limiter.perMinute} a minute)`,
        waitMs,
      );
    }
    await next();
    const status = c.res.status;
    // A verified session credential is never charged, whatever the route answered.
    const credentialed = authenticated.has(request) || gate.knownCredential(request);
    if ((status === 401 || status === 404) && !credentialed) gate.limiter.charge(address);
  };
}

/**
 * The client's address from a header a reverse proxy in front sets (`x-real-ip`, or
 * `x-forwarded-for`, whose last entry is the one the nearest proxy appended; earlier entries are
 * whatever the client claimed). Only for a proxy that always sets it: clients can send it too.
 */
export function addressFromHeader(request: Request, name: string): string | null {
  const value = request.headers.get(name);
  if (!value) return null;
  const last = value.split(",").pop()?.trim();
  return last ? last : null;
}

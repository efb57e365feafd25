import type { Provider } from "../../shared/schemas/capture.ts";
import type { ProviderCodec, RequestContext } from "./codec.ts";
import type { RateLimit } from "./common/rate-limit.ts";
import type { UpstreamModel } from "./common/upstream-model.ts";

/** What one provider route asks for, decided from the method, path and headers before the body is read. */
export interface RouteMatch {
  kind: "generate" | "count_tokens" | "list_models";
  /** Google puts the model in the path. */
  pathModel?: string;
  /** Google puts stream-ness in the path (`:streamGenerateContent`). */
  pathStream?: boolean;
}

/**
 * How an unroutable request is attributed to this provider, so even its 404 comes in a shape the
 * client parses. Detection asks every provider's header hint, then every path hint, then every body
 * hint, in registry order.
 */
export interface DetectionHints {
  header(headers: Headers): boolean;
  path(path: string): boolean;
  body(body: Record<string, unknown>): boolean;
}

/** A provider's token-count endpoint: its body becomes an upstream `/tokenize` body, the count its answer. */
export interface TokenCounting {
  /** Throws CodecError for bad input. */
  tokenizeBody(body: unknown, ctx: RequestContext): Record<string, unknown>;
  encodeCount(count: number): unknown;
}

/**
 * Everything the proxy and the SFT exporter know about one provider API. Every piece is required
 * (a provider without a count endpoint says `countTokens: null`), so a provider missing one fails to
 * compile in the registry instead of falling back to another provider's behaviour at run time.
 */
export interface ProviderModule<P extends string = Provider> extends Omit<ProviderCodec, "provider"> {
  provider: P;
  /** The routes this provider serves, for the path (after `/s/{token}` and without a trailing `/`). */
  matchRoute(method: string, path: string, headers: Headers): RouteMatch | null;
  hints: DetectionHints;
  /** The routes as `METHOD path`, listed in the 404 for an unknown path. */
  served: string[];
  countTokens: TokenCounting | null;
  /** Whether the client's request (which has tools) turned parallel tool calls off; recorded on the capture. */
  parallelToolCallsDisabled(body: Record<string, unknown>): boolean;
  /** This provider's 429 body for a call the proxy refused for fair share (fair-share/); status and headers are set there. */
  encodeRateLimit(limit: RateLimit): unknown;
  /** The upstream model list in this provider's list-models shape. */
  listModels(models: UpstreamModel[]): unknown;
  /**
   * The SFT chat record of one call: the request as the harness sent it with the answer it received
   * appended as the final assistant turn, in this provider's format. Fields the request lacked stay out.
   */
  sftConversation(request: Record<string, unknown>, answer: Record<string, unknown>): Record<string, unknown>;
}

import type { Provider } from "../shared/schemas/capture.ts";
import type { SessionIdentity } from "./auth.ts";
import type { ChatRequest } from "./chat/types.ts";
import { CodecError } from "./codecs/codec.ts";
import type { Gateway } from "./deps.ts";
import { tokensOfBytes } from "./fair-share/session-limiter.ts";
import { vetImages } from "./images/vet-images.ts";
import { providerError } from "./provider-error.ts";
import { postJson } from "./upstream.ts";

/** A provider's count request bound to one request: its upstream `/tokenize` body (throws CodecError) and its answer. */
export interface TokenCounter {
  tokenizeBody(body: unknown): Record<string, unknown>;
  encodeCount(count: number): unknown;
}

/** A count request its session's share admitted: who asks, the parsed body and its bytes as read. */
export interface CountRequest {
  identity: SessionIdentity;
  body: unknown;
  bytes: Uint8Array;
}

/**
 * Token counts come from the upstream's own template and tokenizer (`/tokenize`), never an estimate:
 * Claude Code's context accounting trusts `{input_tokens}`, and 0 or 404 would break it. A count
 * is admitted like a model call (app.ts) and costs its session the tokens the engine counted, or
 * the request's size when there is no count: tokenizing megabytes is work the engine does for it.
 */
export async function handleCountTokens(
  g: Gateway,
  provider: Provider,
  req: CountRequest,
  counter: TokenCounter,
): Promise<Response> {
  let counted: number | null = null;
  try {
    const res = await countTokens(g, provider, req.body, counter);
    counted = res.count;
    return res.response;
  } finally {
    g.fairShare.charge(req.identity, counted ?? tokensOfBytes(req.bytes.byteLength));
  }
}

async function countTokens(
  g: Gateway,
  provider: Provider,
  body: unknown,
  counter: TokenCounter,
): Promise<{ count: number | null; response: Response }> {
  const fail = (status: number, message: string) => ({
    count: null,
    response: providerError(g.codecs, provider, status, message),
  });
  let tokenizeBody: Record<string, unknown>;
  try {
    tokenizeBody = counter.tokenizeBody(body);
    // The engine's /tokenize opens the images too: they are bounded as a model call's are.
    vetImages(tokenizeBody as Pick<ChatRequest, "messages">, {
      ...g.limits,
      allowRemoteImages: g.allowRemoteImages,
    });
  } catch (err) {
    if (err instanceof CodecError) return fail(err.status, err.message);
    return fail(400, `the count request could not be read: ${(err as Error).message}`);
  }
  const r = await postJson(g.upstream, "/tokenize", tokenizeBody);
  if (!r.ok) {
    // A 404 here means the upstream has no /tokenize; the client must not read it as "unknown route".
    const status = r.status === 404 ? 502 : r.status;
    return fail(status, `token counting failed (upstream /tokenize): ${r.message}`);
  }
  const count =
    typeof r.body.count === "number"
      ? r.body.count
      : Array.isArray(r.body.tokens)
        ? r.body.tokens.length
        : null;
  if (count === null || count <= 0) return fail(502, "upstream /tokenize answered without a token count");
  const response = new Response(JSON.stringify(counter.encodeCount(count)), {
    headers: { "content-type": "application/json" },
  });
  return { count, response };
}

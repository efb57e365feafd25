import type { CaptureRecord, Provider } from "../shared/schemas/capture.ts";

/**
 * The answer the harness received for a capture, rebuilt in its provider's shape by the proxy's own
 * codec from the stored upstream chat response. Codec ids are derived from the upstream ids, so this
 * is the same JSON the harness got (for a streamed call: the same content the stream carried).
 * `conversation` is the provider's SFT chat shape: the request with that answer appended.
 */
export interface EncodeAnswer {
  (capture: CaptureRecord): unknown;
  conversation(
    provider: Provider,
    request: Record<string, unknown>,
    answer: Record<string, unknown>,
  ): Record<string, unknown>;
}

export async function loadAnswerEncoder(): Promise<EncodeAnswer> {
  // The proxy's codecs are pure (Web APIs only); loaded lazily like embedded.ts loads the proxy itself.
  const [{ defaultCodecs }, { detectRoute }] = await Promise.all([
    import("../proxy-worker/codecs/registry.ts"),
    import("../proxy-worker/detect.ts"),
  ]);
  const encode = (capture: CaptureRecord): unknown => {
    const codec = defaultCodecs[capture.provider];
    const route = detectRoute("POST", capture.path, new Headers());
    const ctx =
      route.kind === "generate"
        ? {
            path: capture.path,
            query: new URLSearchParams(),
            pathModel: route.pathModel,
            pathStream: route.pathStream,
          }
        : { path: capture.path, query: new URLSearchParams() };
    const decoded = codec.decodeRequest(capture.request, ctx);
    const now = Math.floor(Date.parse(capture.ended_at) / 1000) || 0;
    return codec.encodeResponse(capture.response as never, { decoded, now });
  };
  return Object.assign(encode, {
    conversation: (provider: Provider, request: Record<string, unknown>, answer: Record<string, unknown>) =>
      defaultCodecs[provider].sftConversation(request, answer),
  });
}

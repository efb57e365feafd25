import type { SendInit, StreamedAnswer, TextSink, Upstream } from "../upstream.ts";

/**
 * Opens the engine's stream: through the host's push-based `stream` where it has one (Node), else
 * through `fetch`, whose WHATWG body is read here and pushed on, so the live path has one shape.
 */
export async function openEngineStream(up: Upstream, url: string, init: SendInit): Promise<StreamedAnswer> {
  if (up.stream) return up.stream(url, init);
  // As for non-streamed calls: a redirect is an answer to report, never a request to wherever it points.
  const res = await up.fetch(url, { ...init, redirect: "manual" });
  return {
    status: res.status,
    contentType: res.headers.get("content-type") ?? "",
    text: () => res.text(),
    read: (sink) => {
      void pump(res.body, sink);
    },
  };
}

async function pump(body: ReadableStream<Uint8Array> | null, sink: TextSink) {
  if (body === null) return sink.end();
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        const tail = decoder.decode();
        if (tail !== "") sink.data(tail);
        return sink.end();
      }
      const text = decoder.decode(value, { stream: true });
      if (text !== "") sink.data(text);
    }
  } catch (err) {
    sink.error(err);
  }
}

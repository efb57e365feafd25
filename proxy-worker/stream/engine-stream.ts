import type { SendInit, Upstream } from "../upstream.ts";

/** Receives an engine's streamed body as UTF-8 text, piece by piece as it arrives. */
export interface TextSink {
  data(text: string): void;
  end(): void;
  error(err: unknown): void;
}

/**
 * The engine's answer to a streamed request. Its body is either read whole (`text`: an error, or a
 * JSON answer from an engine that ignored `stream`) or pushed to a sink as it arrives (`read`), once.
 */
export interface StreamedAnswer {
  status: number;
  /** The `content-type` header ("" when absent). */
  contentType: string;
  text(): Promise<string>;
  read(sink: TextSink): void;
  /** Back-pressure: a client that reads slower than the engine samples stops the body until it reads again. */
  pause(): void;
  resume(): void;
}

/**
 * Opens the engine's stream: through the host's push-based `stream` where it has one (Node), else
 * through `fetch`, whose WHATWG body is read here and pushed on, so the live path has one shape.
 */
export async function openEngineStream(up: Upstream, url: string, init: SendInit): Promise<StreamedAnswer> {
  if (up.stream) return up.stream(url, init);
  const res = await up.fetch(url, init);
  const gate = newGate();
  return {
    status: res.status,
    contentType: res.headers.get("content-type") ?? "",
    text: () => res.text(),
    read: (sink) => {
      void pump(res.body, sink, gate);
    },
    pause: () => {
      gate.paused = true;
    },
    resume: () => {
      gate.paused = false;
      gate.wake?.();
      gate.wake = undefined;
    },
  };
}

/** Shared between a fetch-backed answer's `pause`/`resume` and its reading loop. */
const newGate = () => ({ paused: false, wake: undefined as (() => void) | undefined });

async function pump(
  body: ReadableStream<Uint8Array> | null,
  sink: TextSink,
  gate: ReturnType<typeof newGate>,
) {
  if (body === null) return sink.end();
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      while (gate.paused) await new Promise<void>((resolve) => (gate.wake = resolve));
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

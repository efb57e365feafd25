import { describe, expect, it } from "vitest";
import { openEngineStream } from "../../proxy-worker/stream/engine-stream.ts";
import type { Upstream } from "../../proxy-worker/upstream.ts";

/** An upstream reached only through `fetch` (as on Workers), answering `parts` as separate reads. */
function fetchOnly(parts: Uint8Array[]): Upstream {
  const fetch = (async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(ctl) {
          const next = parts.shift();
          if (next === undefined) ctl.close();
          else ctl.enqueue(next);
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    )) as unknown as typeof globalThis.fetch;
  return { baseUrl: "http://engine.test", fetch };
}

const init = { method: "POST" as const, headers: {}, signal: new AbortController().signal };

describe("openEngineStream over fetch (the Worker's path)", () => {
  it("pushes the body as text, a character cut between reads included, then the end", async () => {
    const euro = new TextEncoder().encode("data: €\n\n");
    const answer = await openEngineStream(
      fetchOnly([euro.slice(0, 7), euro.slice(7)]),
      "http://engine.test/v1/chat/completions",
      init,
    );
    expect(answer.contentType).toBe("text/event-stream");
    const text = await new Promise<string>((resolve, reject) => {
      let got = "";
      answer.read({ data: (t) => (got += t), end: () => resolve(got), error: reject });
    });
    expect(text).toBe("data: €\n\n");
  });
});

import { describe, expect, it } from "vitest";
import { openEngineStream } from "../../proxy-worker/stream/engine-stream.ts";
import type { Upstream } from "../../proxy-worker/upstream.ts";

/** An upstream reached only through `fetch` (as on Workers), answering `parts` as separate reads. */
function fetchOnly(parts: Uint8Array[], reads: { n: number }): Upstream {
  const fetch = (async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(ctl) {
          reads.n++;
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
      fetchOnly([euro.slice(0, 7), euro.slice(7)], { n: 0 }),
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

  it("stops reading the body while paused and goes on when resumed", async () => {
    const utf8 = new TextEncoder();
    const reads = { n: 0 };
    const answer = await openEngineStream(
      fetchOnly(
        ["a", "b", "c"].map((s) => utf8.encode(s)),
        reads,
      ),
      "http://engine.test/v1/chat/completions",
      init,
    );
    let got = "";
    let ended = false;
    answer.read({
      data: (t) => {
        got += t;
        answer.pause();
      },
      end: () => {
        ended = true;
      },
      error: () => {},
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toBe("a");
    const readsWhilePaused = reads.n;
    await new Promise((r) => setTimeout(r, 20));
    expect(reads.n).toBe(readsWhilePaused);
    for (const want of ["ab", "abc"]) {
      answer.resume();
      await new Promise((r) => setTimeout(r, 20));
      expect(got).toBe(want);
    }
    answer.resume();
    await new Promise((r) => setTimeout(r, 20));
    expect(ended).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { SseEvents } from "../../proxy-worker/stream/upstream-sse.ts";

/** A body that delivers `parts` as separate reads, split wherever the test says. */
function body(parts: string[]): ReadableStream<Uint8Array> {
  const utf8 = new TextEncoder();
  return new ReadableStream({
    pull(ctl) {
      const next = parts.shift();
      if (next === undefined) ctl.close();
      else ctl.enqueue(utf8.encode(next));
    },
  });
}

async function all(events: SseEvents): Promise<string[]> {
  const out: string[] = [];
  for (let e = await events.next(); e !== null; e = await events.next()) out.push(e);
  return out;
}

describe("SseEvents: the data of an engine's event stream", () => {
  it("splits on blank lines (LF or CRLF), joins data lines, skips comments and other fields", async () => {
    const events = new SseEvents(
      body([
        ': keep-alive\n\ndata: {"a":1}\r\n\r\nevent: x\nid: 3\ndata: line one\ndata:line two\n\n',
        "data: [DONE]\n\n",
      ]),
    );
    expect(await all(events)).toEqual(['{"a":1}', "line one\nline two", "[DONE]"]);
  });

  it("joins an event split across reads, multi-byte characters included, and keeps a last event without its blank line", async () => {
    const euro = new TextEncoder().encode("data: €\n\n");
    // The euro sign's three bytes are cut between two reads.
    const stream = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(euro.slice(0, 7));
        ctl.enqueue(euro.slice(7));
        ctl.enqueue(new TextEncoder().encode('data: {"b"'));
        ctl.enqueue(new TextEncoder().encode(":2}\n\ndata: tail"));
        ctl.close();
      },
    });
    expect(await all(new SseEvents(stream))).toEqual(["€", '{"b":2}', "tail"]);
  });

  it("says when the next event is already here, so a caller drains one read before it waits", async () => {
    const events = new SseEvents(body(["data: 1\n\ndata: 2\n\ndata: 3", "\n\n"]));
    expect(await events.next()).toBe("1");
    expect(events.buffered).toBe(true);
    expect(await events.next()).toBe("2");
    expect(events.buffered).toBe(false);
    expect(await events.next()).toBe("3");
    expect(await events.next()).toBeNull();
  });
});

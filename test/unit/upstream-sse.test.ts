import { describe, expect, it } from "vitest";
import { SseParser } from "../../proxy-worker/stream/upstream-sse.ts";

/** Every event of `parts` pushed one after another, then the end of the body. */
function events(parts: string[]): string[] {
  const out: string[] = [];
  const parser = new SseParser((data) => out.push(data));
  for (const p of parts) parser.push(p);
  parser.end();
  return out;
}

describe("SseParser: the data of an engine's event stream", () => {
  it("splits on blank lines (LF or CRLF), joins data lines, skips comments and other fields", () => {
    expect(
      events([
        ': keep-alive\n\ndata: {"a":1}\r\n\r\nevent: x\nid: 3\ndata: line one\ndata:line two\n\n',
        "data: [DONE]\n\n",
      ]),
    ).toEqual(['{"a":1}', "line one\nline two", "[DONE]"]);
  });

  it("joins an event split across pushes, CRLF cut between them included, and keeps a last event without its blank line", () => {
    expect(events(["data: €\r", "\n\r\n", 'data: {"b"', ":2}\n", "\ndata: tail"])).toEqual([
      "€",
      '{"b":2}',
      "tail",
    ]);
    expect(events(["data:", "\n\ndata: x"])).toEqual(["", "x"]);
  });

  it("delivers every event of one push before the push returns, and nothing of an unfinished one", () => {
    const seen: string[] = [];
    const parser = new SseParser((data) => seen.push(data));
    parser.push("data: 1\n\ndata: 2\n\ndata: 3");
    expect(seen).toEqual(["1", "2"]);
    parser.push("\n\n");
    expect(seen).toEqual(["1", "2", "3"]);
    parser.end();
    expect(seen).toEqual(["1", "2", "3"]);
  });
});

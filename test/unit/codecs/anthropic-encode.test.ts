import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import {
  anthropicCodec,
  encodeAnthropicStreamError,
  encodeCountTokens,
} from "../../../proxy-worker/codecs/anthropic/index.ts";
import { CodecError, type DecodedRequest, type EncodeContext } from "../../../proxy-worker/codecs/codec.ts";

const FIXTURES = new URL("../../../proxy-worker/codecs/anthropic/__fixtures__/", import.meta.url);
const upstream = (name: string): ChatResponse =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8"));
const decoded: DecodedRequest = {
  chat: { model: "claude-sonnet-4-5", messages: [] },
  stream: true,
  model: "claude-sonnet-4-5",
};
const ctx: EncodeContext = { decoded, now: 1795312800 };
const SCENARIOS = [
  "upstream-text",
  "upstream-tool-calls-parallel",
  "upstream-length",
  "upstream-stop-sequence",
];

/** Parses SSE text into (event, data) pairs, failing on any frame without an `event:` line. */
function parseFrames(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split("\n\n")
    .filter((frame) => frame.length > 0)
    .map((frame) => {
      const [eventLine, dataLine, ...rest] = frame.split("\n");
      expect(rest).toEqual([]);
      expect(eventLine).toMatch(/^event: [a-z_]+$/);
      expect(dataLine).toMatch(/^data: /);
      return { event: eventLine.slice(7), data: JSON.parse(dataLine.slice(6)) };
    });
}

describe("anthropic encode: fixtures", () => {
  for (const name of SCENARIOS) {
    it(`${name}: response and stream match the recorded answers`, async () => {
      const chat = upstream(name);
      const response = anthropicCodec.encodeResponse(chat, ctx);
      await expect(`${JSON.stringify(response, null, 2)}\n`).toMatchFileSnapshot(
        new URL(`expected/${name}.response.json`, FIXTURES).pathname,
      );
      const stream = anthropicCodec.encodeStream(chat, ctx).join("");
      await expect(stream).toMatchFileSnapshot(new URL(`expected/${name}.chunks.txt`, FIXTURES).pathname);
    });
  }
});

describe("anthropic encode: rules", () => {
  it("orders blocks thinking, text, tool_use and signs thinking", () => {
    const message = anthropicCodec.encodeResponse(upstream("upstream-tool-calls-parallel"), ctx) as {
      id: string;
      content: { type: string; signature?: string; id?: string; input?: unknown }[];
      stop_reason: string;
    };
    expect(message.id).toMatch(/^msg_[A-Za-z0-9]{22}$/);
    expect(message.content.map((b) => b.type)).toEqual(["thinking", "text", "tool_use", "tool_use"]);
    expect(message.content[0].signature).toMatch(/^sig_/);
    expect(message.stop_reason).toBe("tool_use");
    // A valid upstream id is kept; one outside [A-Za-z0-9_-] is wrapped reversibly.
    expect(message.content[2].id).toBe("chatcmpl-tool-7f3a9c1e2b4d4e5f");
    expect(message.content[3].id).toBe("toolu_b64_ZnVuY3Rpb25zLlJlYWQ6MQ");
    expect(message.content[3].input).toEqual({ file_path: "/work/task/src/math.ts" });
  });

  it("round-trips wrapped tool ids: emitted id -> tool_result -> same upstream tool_call_id", () => {
    const chat = upstream("upstream-tool-calls-parallel");
    const message = anthropicCodec.encodeResponse(chat, ctx) as { content: { type: string; id?: string }[] };
    const toolUses = message.content.filter((b) => b.type === "tool_use");
    const next = anthropicCodec.decodeRequest(
      {
        model: "m",
        max_tokens: 10,
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: message.content },
          {
            role: "user",
            content: toolUses.map((b) => ({ type: "tool_result", tool_use_id: b.id, content: "ok" })),
          },
        ],
      },
      { path: "/v1/messages", query: new URLSearchParams() },
    );
    const upstreamIds = chat.choices[0].message.tool_calls?.map((c) => c.id);
    expect(next.chat.messages[1].tool_calls?.map((c) => c.id)).toEqual(upstreamIds);
    expect(next.chat.messages.slice(2).map((m) => m.tool_call_id)).toEqual(upstreamIds);
  });

  it("reports a matched stop string as stop_sequence, a stop token id as end_turn", () => {
    const chat = upstream("upstream-stop-sequence");
    expect(anthropicCodec.encodeResponse(chat, ctx)).toMatchObject({
      stop_reason: "stop_sequence",
      stop_sequence: "</answer>",
    });
    chat.choices[0].stop_reason = 151645;
    expect(anthropicCodec.encodeResponse(chat, ctx)).toMatchObject({
      stop_reason: "end_turn",
      stop_sequence: null,
    });
  });

  it("maps finish reasons and splits cached tokens out of input_tokens", () => {
    const chat = upstream("upstream-text");
    const reason = (finish: string) => {
      chat.choices[0].finish_reason = finish;
      return (anthropicCodec.encodeResponse(chat, ctx) as { stop_reason: string }).stop_reason;
    };
    expect([reason("stop"), reason("length"), reason("content_filter"), reason("tool_calls")]).toEqual([
      "end_turn",
      "max_tokens",
      "refusal",
      "tool_use",
    ]);
    expect((anthropicCodec.encodeResponse(chat, ctx) as { usage: unknown }).usage).toEqual({
      input_tokens: 11842 - 11776,
      output_tokens: 41,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 11776,
    });
  });

  it("drops empty text and turns bad tool arguments into an object without failing", () => {
    const chat = upstream("upstream-tool-calls-parallel");
    chat.choices[0].message.content = "";
    chat.choices[0].message.reasoning = null;
    chat.choices[0].message.tool_calls = [
      { id: "call_1", type: "function", function: { name: "Bash", arguments: '{"command": "ls' } },
    ];
    const message = anthropicCodec.encodeResponse(chat, ctx) as {
      content: { type: string; input?: unknown }[];
    };
    expect(message.content).toEqual([
      { type: "tool_use", id: "call_1", name: "Bash", input: { _raw_arguments: '{"command": "ls' } },
    ]);
  });

  it("is deterministic: the same upstream answer encodes to the same bytes", () => {
    const a = anthropicCodec.encodeStream(upstream("upstream-tool-calls-parallel"), ctx);
    const b = anthropicCodec.encodeStream(upstream("upstream-tool-calls-parallel"), ctx);
    expect(a).toEqual(b);
    const other = upstream("upstream-tool-calls-parallel");
    other.id = "chatcmpl-other";
    expect(anthropicCodec.encodeStream(other, ctx)[0]).not.toEqual(a[0]);
  });
});

describe("anthropic stream: event order", () => {
  for (const name of SCENARIOS) {
    it(`${name}: every frame has an event line and blocks follow start, deltas, stop`, () => {
      const chat = upstream(name);
      const frames = parseFrames(anthropicCodec.encodeStream(chat, ctx).join(""));
      const events = frames.map((f) => f.event);
      expect(frames.every((f) => f.data.type === f.event)).toBe(true);
      expect(events[0]).toBe("message_start");
      expect(events.slice(-2)).toEqual(["message_delta", "message_stop"]);
      const message = anthropicCodec.encodeResponse(chat, ctx) as {
        content: { type: string }[];
        usage: unknown;
      };
      const start = frames[0].data.message as { usage: { input_tokens: number }; content: unknown[] };
      expect(start.content).toEqual([]);
      expect(start.usage).toMatchObject({
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: expect.any(Number),
      });
      const body = events.slice(1, -2).filter((e) => e !== "ping");
      let i = 0;
      message.content.forEach((block, index) => {
        expect(body[i]).toBe("content_block_start");
        const deltas =
          block.type === "thinking"
            ? ["content_block_delta", "content_block_delta"]
            : ["content_block_delta"];
        expect(body.slice(i + 1, i + 1 + deltas.length)).toEqual(deltas);
        expect(body[i + 1 + deltas.length]).toBe("content_block_stop");
        const blockFrames = frames.filter((f) => (f.data as { index?: number }).index === index);
        if (block.type === "thinking") {
          expect(blockFrames.map((f) => (f.data.delta as { type?: string } | undefined)?.type)).toEqual([
            undefined,
            "thinking_delta",
            "signature_delta",
            undefined,
          ]);
        }
        if (block.type === "tool_use") {
          expect((blockFrames[0].data.content_block as { input: unknown }).input).toEqual({});
          expect((blockFrames[1].data.delta as { type: string }).type).toBe("input_json_delta");
        }
        i += 2 + deltas.length;
      });
      expect(i).toBe(body.length);
      expect(frames.at(-2)?.data.usage).toEqual(message.usage);
    });
  }
});

describe("anthropic errors", () => {
  it("uses the status -> type table", () => {
    const table: [number, string][] = [
      [400, "invalid_request_error"],
      [401, "authentication_error"],
      [403, "permission_error"],
      [404, "not_found_error"],
      [413, "request_too_large"],
      [429, "rate_limit_error"],
      [500, "api_error"],
      [529, "overloaded_error"],
      [422, "invalid_request_error"],
      [502, "api_error"],
    ];
    for (const [status, type] of table) {
      expect(anthropicCodec.encodeError(status, "why")).toEqual({
        type: "error",
        error: { type, message: "why" },
      });
    }
  });

  it("writes a mid-stream error as an error event", () => {
    expect(encodeAnthropicStreamError(500, "upstream died")).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream died"}}\n\n',
    );
  });

  it("reads the engine's /tokenize answer, refusing a malformed one", () => {
    expect(encodeCountTokens({ count: 1234, max_model_len: 40960, tokens: [] })).toEqual({
      input_tokens: 1234,
    });
    expect(() => encodeCountTokens({ tokens: [] })).toThrow(CodecError);
  });
});

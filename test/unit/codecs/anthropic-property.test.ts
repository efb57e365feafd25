import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import { anthropicCodec } from "../../../proxy-worker/codecs/anthropic/index.ts";
import { CodecError, type EncodeContext } from "../../../proxy-worker/codecs/codec.ts";

const ctx = { path: "/v1/messages", query: new URLSearchParams(), maxModelLen: 32768 };
const encodeCtx: EncodeContext = {
  decoded: { chat: { model: "m", messages: [] }, stream: true, model: "m" },
  now: 0,
};

function decodeOutcome(body: unknown): "ok" | "400" {
  try {
    anthropicCodec.decodeRequest(body, ctx);
    return "ok";
  } catch (error) {
    // Anything but a CodecError 400 (a TypeError, a zod error escaping) is a crash.
    if (error instanceof CodecError && error.status === 400) return "400";
    throw error;
  }
}

const text = fc.string({ maxLength: 12 });
const block = fc.oneof(
  fc.record({ type: fc.constant("text"), text: fc.oneof(text, fc.integer()) }),
  fc.record({ type: fc.constant("thinking"), thinking: text, signature: text }),
  fc.record({ type: fc.constant("tool_use"), id: text, name: text, input: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({
    type: fc.constant("tool_result"),
    tool_use_id: text,
    is_error: fc.boolean(),
    content: fc.oneof(
      text,
      fc.array(fc.record({ type: fc.constantFrom("text", "image", "other"), text })),
      fc.anything({ maxDepth: 2 }),
    ),
  }),
  fc.record({
    type: fc.constant("image"),
    source: fc.record({ type: fc.constantFrom("base64", "url"), data: text, url: text }),
  }),
  fc.record({ type: fc.string({ maxLength: 6 }) }),
  fc.anything({ maxDepth: 2 }),
);
const message = fc.record({
  role: fc.constantFrom("user", "assistant", "system", "tool"),
  content: fc.oneof(text, fc.array(block, { maxLength: 4 })),
});
const shapedBody = fc.record(
  {
    model: fc.oneof(fc.constant("m"), fc.anything()),
    max_tokens: fc.oneof(fc.integer({ min: -5, max: 200000 }), fc.anything()),
    messages: fc.array(message, { maxLength: 5 }),
    system: fc.oneof(text, fc.array(fc.record({ type: fc.constant("text"), text }))),
    tools: fc.array(
      fc.record({ name: text, input_schema: fc.oneof(fc.object({ maxDepth: 1 }), fc.constant(undefined)) }),
      {
        maxLength: 3,
      },
    ),
    tool_choice: fc.record({ type: fc.constantFrom("auto", "any", "none", "tool", "bogus"), name: text }),
    thinking: fc.record({ type: fc.constantFrom("enabled", "disabled", "adaptive", "x") }),
  },
  { requiredKeys: [] },
);

describe("anthropic decode never crashes", () => {
  it("arbitrary JSON: ok or CodecError 400", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => void decodeOutcome(body)),
      { numRuns: 300 },
    );
  });

  it("request-shaped bodies: ok or CodecError 400, and both outcomes happen", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(shapedBody, (body) => {
        seen.add(decodeOutcome(body));
      }),
      { numRuns: 400 },
    );
    expect(seen).toEqual(new Set(["ok", "400"]));
  });
});

const chatResponse = fc.record({
  id: fc.string({ minLength: 1, maxLength: 10 }),
  content: fc.option(fc.string({ maxLength: 20 })),
  reasoning: fc.option(fc.string({ maxLength: 20 })),
  finish: fc.constantFrom("stop", "length", "tool_calls", "content_filter", "abort"),
  stopReason: fc.option(fc.oneof(fc.string({ maxLength: 5 }), fc.integer())),
  calls: fc.array(
    fc.record({
      id: fc.string({ maxLength: 12 }),
      name: fc.string({ maxLength: 8 }),
      args: fc.string({ maxLength: 20 }),
    }),
    {
      maxLength: 3,
    },
  ),
});

/** A minimal accumulator for our frames, independent of the SDK (the SDK test covers the real parser). */
function replay(frames: string[]): Record<string, unknown> {
  let message: Record<string, unknown> & { content: Record<string, unknown>[] } = { content: [] };
  const json: string[] = [];
  for (const frame of frames) {
    const data = JSON.parse(frame.split("\n")[1].slice(6));
    if (data.type === "message_start") message = data.message;
    if (data.type === "content_block_start") message.content.push(data.content_block);
    if (data.type === "content_block_delta") {
      const target = message.content[data.index];
      const delta = data.delta;
      if (delta.type === "text_delta") target.text += delta.text;
      if (delta.type === "thinking_delta") target.thinking += delta.thinking;
      if (delta.type === "signature_delta") target.signature = delta.signature;
      if (delta.type === "input_json_delta") json[data.index] = (json[data.index] ?? "") + delta.partial_json;
    }
    if (data.type === "content_block_stop" && json[data.index] !== undefined) {
      message.content[data.index].input = JSON.parse(json[data.index]);
    }
    if (data.type === "message_delta") Object.assign(message, data.delta, { usage: data.usage });
  }
  return message;
}

describe("anthropic encode: the stream replays to the JSON answer", () => {
  it("for arbitrary upstream answers", () => {
    fc.assert(
      fc.property(chatResponse, (r) => {
        const chat: ChatResponse = {
          id: r.id,
          object: "chat.completion",
          created: 0,
          model: "m",
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: r.content,
                reasoning: r.reasoning,
                tool_calls: r.calls.map((c) => ({
                  id: c.id,
                  type: "function",
                  function: { name: c.name, arguments: c.args },
                })),
              },
              finish_reason: r.finish,
              stop_reason: r.stopReason,
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        };
        const response = anthropicCodec.encodeResponse(chat, encodeCtx) as { content: { id?: string }[] };
        expect(replay(anthropicCodec.encodeStream(chat, encodeCtx))).toEqual(response);
        const ids = response.content.filter((b) => b.id !== undefined).map((b) => b.id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
      }),
      { numRuns: 200 },
    );
  });
});

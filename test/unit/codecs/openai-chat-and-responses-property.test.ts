import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import { CodecError, type ProviderCodec } from "../../../proxy-worker/codecs/codec.ts";
import { openaiChatCodec } from "../../../proxy-worker/codecs/openai-chat/index.ts";
import { openaiResponsesCodec } from "../../../proxy-worker/codecs/openai-responses/index.ts";
import {
  decodeReasoningEnvelope,
  encodeReasoningEnvelope,
} from "../../../proxy-worker/codecs/openai-responses/reasoning-envelope.ts";
import { NOW } from "./openai-codec-fixtures.ts";

const ctxIn = { path: "/v1/x", query: new URLSearchParams(), maxModelLen: 8192 };

function onlyCodecErrors(codec: ProviderCodec, body: unknown): void {
  try {
    codec.decodeRequest(body, ctxIn);
  } catch (error) {
    if (!(error instanceof CodecError) || error.status !== 400) throw error;
  }
}

/** Values shaped like the real thing (right keys, random values) reach deeper than random JSON. */
const messageLike = fc.record(
  {
    role: fc.constantFrom("system", "developer", "user", "assistant", "tool", "function", "x"),
    content: fc.oneof(
      fc.string(),
      fc.constant(null),
      fc.array(fc.record({ type: fc.string(), text: fc.anything() })),
    ),
    reasoning_content: fc.oneof(fc.string(), fc.constant(null)),
    tool_calls: fc.array(
      fc.record({ id: fc.string(), function: fc.record({ name: fc.string(), arguments: fc.anything() }) }),
    ),
    tool_call_id: fc.string(),
  },
  { requiredKeys: [] },
);
const itemLike = fc.record(
  {
    type: fc.constantFrom(
      "message",
      "function_call",
      "function_call_output",
      "custom_tool_call",
      "custom_tool_call_output",
      "reasoning",
      "local_shell_call",
      "local_shell_call_output",
      "item_reference",
      "other",
    ),
    role: fc.constantFrom("user", "assistant", "system", "developer", "tool"),
    content: fc.oneof(
      fc.string(),
      fc.array(
        fc.record(
          {
            type: fc.constantFrom("input_text", "output_text", "input_image", "refusal", "input_file"),
            text: fc.anything(),
            image_url: fc.anything(),
            file_id: fc.anything(),
          },
          { requiredKeys: ["type"] },
        ),
      ),
    ),
    call_id: fc.string(),
    id: fc.string(),
    name: fc.string(),
    arguments: fc.oneof(fc.string(), fc.anything()),
    input: fc.anything(),
    output: fc.oneof(fc.string(), fc.anything()),
    summary: fc.array(fc.record({ type: fc.constant("summary_text"), text: fc.string() })),
    encrypted_content: fc.oneof(fc.string(), fc.string().map(encodeReasoningEnvelope)),
    action: fc.record({ type: fc.constant("exec"), command: fc.array(fc.string()) }),
  },
  { requiredKeys: ["type"] },
);

describe("OpenAI codecs never throw anything but a 400 CodecError on client input", () => {
  it("chat: arbitrary JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => onlyCodecErrors(openaiChatCodec, body)),
      { numRuns: 300 },
    );
  });
  it("chat: request-shaped values", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            model: fc.string(),
            messages: fc.array(messageLike),
            max_tokens: fc.anything(),
            tools: fc.anything(),
            stream: fc.anything(),
          },
          { requiredKeys: [] },
        ),
        (body) => onlyCodecErrors(openaiChatCodec, body),
      ),
      { numRuns: 300 },
    );
  });
  it("responses: arbitrary JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => onlyCodecErrors(openaiResponsesCodec, body)),
      { numRuns: 300 },
    );
  });
  it("responses: request-shaped values", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            model: fc.string(),
            input: fc.oneof(fc.string(), fc.array(itemLike)),
            instructions: fc.anything(),
            tools: fc.array(
              fc.record(
                {
                  type: fc.constantFrom("function", "custom", "local_shell", "web_search"),
                  name: fc.anything(),
                  format: fc.anything(),
                },
                { requiredKeys: ["type"] },
              ),
            ),
            tool_choice: fc.anything(),
            reasoning: fc.record({ effort: fc.constantFrom("none", "minimal", "low", "xhigh", "weird") }),
            text: fc.record({
              format: fc.record({
                type: fc.constantFrom("json_schema", "json_object", "text"),
                schema: fc.anything(),
              }),
            }),
            previous_response_id: fc.option(fc.string()),
          },
          { requiredKeys: ["model"] },
        ),
        (body) => onlyCodecErrors(openaiResponsesCodec, body),
      ),
      { numRuns: 300 },
    );
  });
});

describe("OpenAI codecs encode any well-typed upstream answer", () => {
  const upstreamAnswer = fc.record({
    content: fc.option(fc.string()),
    reasoning: fc.option(fc.string()),
    calls: fc.array(
      fc.record({
        id: fc.string(),
        name: fc.constantFrom("exec_command", "apply_patch", "local_shell"),
        arguments: fc.string(),
      }),
      { maxLength: 3 },
    ),
    finish: fc.constantFrom("stop", "length", "tool_calls", "abort", null),
  });
  it("responses and chat: JSON answer and stream agree on the final object", () => {
    const decodedResponses = openaiResponsesCodec.decodeRequest(
      {
        model: "m",
        input: "hi",
        tools: [{ type: "custom", name: "apply_patch" }, { type: "local_shell" }],
        stream: true,
      },
      ctxIn,
    );
    const decodedChat = openaiChatCodec.decodeRequest(
      {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        stream: true,
        stream_options: { include_usage: true },
      },
      ctxIn,
    );
    fc.assert(
      fc.property(upstreamAnswer, (answer) => {
        const chat: ChatResponse = {
          id: "chatcmpl-p",
          object: "chat.completion",
          created: 1,
          model: "m",
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: answer.content,
                reasoning: answer.reasoning,
                tool_calls: answer.calls.map((c) => ({
                  id: c.id,
                  type: "function",
                  function: { name: c.name, arguments: c.arguments },
                })),
              },
              finish_reason: answer.finish,
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
        };
        const r = { decoded: decodedResponses, now: NOW };
        const frames = openaiResponsesCodec.encodeStream(chat, r);
        const last = JSON.parse(frames.at(-1)!.split("\n")[1].slice(6));
        expect(last.response).toEqual(openaiResponsesCodec.encodeResponse(chat, r));
        const c = { decoded: decodedChat, now: NOW };
        expect(openaiChatCodec.encodeStream(chat, c).at(-1)).toBe("data: [DONE]\n\n");
        expect(() => JSON.stringify(openaiChatCodec.encodeResponse(chat, c))).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });

  it("malformed upstream tool calls and fields never make an encoder throw", () => {
    const decoded = openaiResponsesCodec.decodeRequest(
      { model: "m", input: "hi", tools: [{ type: "local_shell" }] },
      ctxIn,
    );
    const decodedChat = openaiChatCodec.decodeRequest(
      { model: "m", messages: [{ role: "user", content: "x" }] },
      ctxIn,
    );
    fc.assert(
      fc.property(fc.anything(), fc.anything(), fc.anything(), (toolCalls, reasoning, usage) => {
        const chat = {
          id: "chatcmpl-m",
          object: "chat.completion",
          created: 1,
          model: "m",
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: "t", tool_calls: toolCalls, reasoning },
              finish_reason: "stop",
            },
          ],
          usage,
        } as unknown as ChatResponse;
        for (const [codec, d] of [
          [openaiResponsesCodec, decoded],
          [openaiChatCodec, decodedChat],
        ] as const) {
          const ctx = { decoded: d, now: NOW };
          JSON.stringify(codec.encodeResponse(chat, ctx));
          expect(codec.encodeStream(chat, ctx).length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the reasoning envelope gives back any text exactly", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), (text) => {
        expect(decodeReasoningEnvelope(encodeReasoningEnvelope(text))).toBe(text);
      }),
    );
    expect(decodeReasoningEnvelope("gAAAAABforeign")).toBeUndefined();
    expect(decodeReasoningEnvelope("polar-reasoning-v1:!!!")).toBeUndefined();
  });
});

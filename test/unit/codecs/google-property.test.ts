import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import { CodecError, type EncodeContext } from "../../../proxy-worker/codecs/codec.ts";
import { googleCodec } from "../../../proxy-worker/codecs/google/index.ts";

const ctx = {
  path: "/v1beta/models/m:generateContent",
  query: new URLSearchParams(),
  pathModel: "m",
  maxModelLen: 32768,
};

function decodeOutcome(body: unknown): "ok" | "400" {
  try {
    googleCodec.decodeRequest(body, ctx);
    return "ok";
  } catch (error) {
    if (error instanceof CodecError && error.status === 400) return "400";
    throw error;
  }
}

const text = fc.string({ maxLength: 10 });
const part = fc.oneof(
  fc.record({ text: fc.oneof(text, fc.integer()), thought: fc.boolean() }, { requiredKeys: ["text"] }),
  fc.record({
    functionCall: fc.record(
      { id: text, name: text, args: fc.oneof(fc.object({ maxDepth: 1 }), fc.anything()) },
      { requiredKeys: ["name"] },
    ),
  }),
  fc.record({
    function_response: fc.record(
      { id: text, name: text, response: fc.jsonValue({ maxDepth: 2 }) },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ inlineData: fc.record({ mimeType: text, data: text }) }),
  fc.record({ fileData: fc.record({ fileUri: text }) }),
  fc.anything({ maxDepth: 2 }),
);
const shapedBody = fc.record(
  {
    contents: fc.array(
      fc.record({
        role: fc.constantFrom("user", "model", "function", "x"),
        parts: fc.array(part, { maxLength: 4 }),
      }),
      {
        maxLength: 5,
      },
    ),
    systemInstruction: fc.oneof(text, fc.record({ parts: fc.array(fc.record({ text })) })),
    tools: fc.array(
      fc.oneof(
        fc.record({
          functionDeclarations: fc.array(fc.record({ name: text, parameters: fc.object({ maxDepth: 1 }) }), {
            maxLength: 2,
          }),
        }),
        fc.record({ googleSearch: fc.object({ maxDepth: 1 }) }),
      ),
      { maxLength: 2 },
    ),
    toolConfig: fc.record({
      functionCallingConfig: fc.record({ mode: fc.constantFrom("AUTO", "ANY", "NONE", "bogus") }),
    }),
    generation_config: fc.record(
      {
        max_output_tokens: fc.oneof(fc.integer({ min: -3, max: 100000 }), fc.anything()),
        responseMimeType: fc.constantFrom("application/json", "text/plain"),
        responseSchema: fc.object({ maxDepth: 1 }),
        thinkingConfig: fc.record(
          { thinkingBudget: fc.integer({ min: -1, max: 10 }), thinkingLevel: text },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

describe("google decode never crashes", () => {
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

describe("google encode: the stream adds up to the JSON answer", () => {
  const encodeCtx: EncodeContext = {
    decoded: {
      chat: { model: "m", messages: [] },
      stream: true,
      model: "m",
      state: { includeThoughts: true },
    },
    now: 0,
  };
  it("for arbitrary upstream answers", () => {
    const answer = fc.record({
      content: fc.option(fc.string({ maxLength: 20 })),
      reasoning: fc.option(fc.string({ maxLength: 20 })),
      finish: fc.constantFrom("stop", "length", "tool_calls", "content_filter"),
      calls: fc.array(
        fc.record({
          id: fc.string({ maxLength: 8 }),
          name: fc.string({ maxLength: 8 }),
          args: fc.string({ maxLength: 16 }),
        }),
        {
          maxLength: 3,
        },
      ),
    });
    fc.assert(
      fc.property(answer, (r) => {
        const chat: ChatResponse = {
          id: "chatcmpl-x",
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
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        };
        type Body = {
          candidates: { content: { parts: { text?: string }[] }; finishReason?: string }[];
          usageMetadata?: unknown;
        };
        const body = googleCodec.encodeResponse(chat, encodeCtx) as Body;
        const records = googleCodec.encodeStream(chat, encodeCtx).map((f) => JSON.parse(f.slice(6)) as Body);
        expect(records.flatMap((x) => x.candidates[0].content.parts)).toEqual(
          body.candidates[0].content.parts,
        );
        expect(records.at(-1)?.candidates[0].finishReason).toBe(body.candidates[0].finishReason);
        expect(records.at(-1)?.usageMetadata).toEqual(body.usageMetadata);
        expect(body.candidates[0].content.parts.every((p) => p.text === undefined || p.text.length > 0)).toBe(
          true,
        );
      }),
      { numRuns: 200 },
    );
  });
});

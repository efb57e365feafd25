import { readFileSync } from "node:fs";
import { GoogleGenAI } from "@google/genai";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import type { EncodeContext } from "../../../proxy-worker/codecs/codec.ts";
import { encodeGoogleStreamError, googleCodec } from "../../../proxy-worker/codecs/google/index.ts";

const FIXTURES = new URL("../../../proxy-worker/codecs/google/__fixtures__/", import.meta.url);
const upstream = (name: string): ChatResponse =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8"));
const ctx: EncodeContext = {
  decoded: {
    chat: { model: "gemini-2.5-pro", messages: [] },
    stream: true,
    model: "gemini-2.5-pro",
    state: { includeThoughts: true },
  },
  now: 1795312800,
};

/** An SDK client whose injected fetch answers with the given body: nothing touches the network. */
function clientAnswering(body: string, contentType: string, status = 200): GoogleGenAI {
  return new GoogleGenAI({
    apiKey: "x",
    httpOptions: {
      baseUrl: "http://127.0.0.1:1",
      fetch: async () => new Response(body, { status, headers: { "content-type": contentType } }),
      retryOptions: { attempts: 1 },
    } as never,
  });
}

const plain = (value: unknown) => JSON.parse(JSON.stringify(value));

describe("official @google/genai reads our answers", () => {
  for (const name of ["upstream-routing-json", "upstream-tool-calls-parallel", "upstream-length"]) {
    it(`${name}: generateContentStream chunks add up to the non-streaming answer`, async () => {
      const chat = upstream(name);
      const sse = googleCodec.encodeStream(chat, ctx).join("");
      const stream = await clientAnswering(sse, "text/event-stream").models.generateContentStream({
        model: "gemini-2.5-pro",
        contents: "go",
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      const expected = googleCodec.encodeResponse(chat, ctx) as {
        candidates: { content: { parts: unknown[] }; finishReason: string }[];
        usageMetadata: unknown;
        responseId: string;
      };
      expect(plain(chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []))).toEqual(
        expected.candidates[0].content.parts,
      );
      const last = chunks.at(-1)!;
      expect(last.candidates?.[0]?.finishReason).toBe(expected.candidates[0].finishReason);
      expect(plain(last.usageMetadata)).toEqual(expected.usageMetadata);
      expect(chunks.every((c) => c.responseId === expected.responseId)).toBe(true);
    });

    it(`${name}: generateContent accepts the JSON answer`, async () => {
      const chat = upstream(name);
      const expected = googleCodec.encodeResponse(chat, ctx) as {
        candidates: unknown[];
        usageMetadata: unknown;
      };
      const response = await clientAnswering(
        JSON.stringify(expected),
        "application/json",
      ).models.generateContent({
        model: "gemini-2.5-pro",
        contents: "go",
      });
      expect(plain(response.candidates)).toEqual(expected.candidates);
      expect(plain(response.usageMetadata)).toEqual(expected.usageMetadata);
    });
  }

  it("exposes function calls with the upstream ids and JSON text for the routing call", async () => {
    const calls = await clientAnswering(
      JSON.stringify(googleCodec.encodeResponse(upstream("upstream-tool-calls-parallel"), ctx)),
      "application/json",
    ).models.generateContent({ model: "m", contents: "go" });
    expect(calls.functionCalls?.map((c) => c.id)).toEqual([
      "chatcmpl-tool-0a9b8c7d6e5f4a3b",
      "chatcmpl-tool-1c2d3e4f5a6b7c8d",
    ]);
    const noThoughts = { ...ctx, decoded: { ...ctx.decoded, state: { includeThoughts: false } } };
    const routing = await clientAnswering(
      JSON.stringify(googleCodec.encodeResponse(upstream("upstream-routing-json"), noThoughts)),
      "application/json",
    ).models.generateContent({ model: "m", contents: "go" });
    expect(JSON.parse(routing.text ?? "")).toEqual({
      reasoning: "Running tests and fixing one function is a bounded task of 2-3 tool calls.",
      model_choice: "flash",
    });
  });

  it("raises a mid-stream error record as an error", async () => {
    const sse =
      googleCodec.encodeStream(upstream("upstream-length"), ctx)[0] +
      encodeGoogleStreamError(503, "engine down");
    const stream = await clientAnswering(sse, "text/event-stream").models.generateContentStream({
      model: "m",
      contents: "go",
    });
    await expect(async () => {
      for await (const _chunk of stream) {
        // drain
      }
    }).rejects.toThrow(/engine down/);
  });
});

// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { openaiChatCodec } from "../../../proxy-worker/codecs/openai-chat/index.ts";
import { encodeContext, loadFixture, sseFetch, upstream } from "./openai-codec-fixtures.ts";

const UPSTREAMS = ["upstream-text", "upstream-parallel-tool-calls", "upstream-reasoning", "upstream-length"];

/** The official SDK's stream accumulator must rebuild exactly what the non-streaming answer says. */
describe("openai chat codec: the official openai SDK reads our streams", () => {
  it.each(UPSTREAMS)("%s: finalChatCompletion() equals encodeResponse()", async (name) => {
    const body = loadFixture<Record<string, any>>("openai-chat", "qwen-code-stream.request.json");
    const { ctx } = encodeContext(openaiChatCodec, body);
    const chat = upstream("openai-chat", `${name}.json`);
    const expected = openaiChatCodec.encodeResponse(chat, ctx) as Record<string, any>;
    const client = new OpenAI({
      apiKey: "x",
      baseURL: "http://127.0.0.1:1/v1",
      maxRetries: 0,
      fetch: sseFetch(openaiChatCodec.encodeStream(chat, ctx)),
    });
    const { stream: _stream, stream_options: _options, ...params } = body;
    const stream = client.chat.completions.stream({
      ...(params as any),
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();

    expect(final.id).toBe(expected.id);
    expect(final.model).toBe(expected.model);
    expect(final.created).toBe(expected.created);
    expect(final.usage).toEqual(expected.usage);
    expect(final.choices).toHaveLength(1);
    const [got] = final.choices;
    const [want] = expected.choices;
    expect(got.finish_reason).toBe(want.finish_reason);
    expect(got.message.content).toBe(want.message.content);
    expect((got.message as any).reasoning).toBe(want.message.reasoning);
    expect((got.message as any).reasoning_content).toBe(want.message.reasoning_content);
    expect(got.message.tool_calls ?? []).toEqual(want.message.tool_calls ?? []);
  });
});

// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { describe, expect, it } from "vitest";
import { openaiChatCodec } from "../../../proxy-worker/codecs/openai-chat/index.ts";
import { readAll } from "../../support/read-all.ts";
import { encodeContext, loadFixture, sseFetch, upstream } from "./openai-codec-fixtures.ts";

const UPSTREAMS = ["upstream-text", "upstream-parallel-tool-calls", "upstream-reasoning", "upstream-length"];
const UNIFIED_FINISH: Record<string, string> = { stop: "stop", length: "length", tool_calls: "tool-calls" };
const prompt = [{ role: "user" as const, content: [{ type: "text" as const, text: "Create hello.txt" }] }];

function model(fetch: typeof globalThis.fetch) {
  // OpenCode's provider: `@ai-sdk/openai-compatible` with usage in the stream.
  return createOpenAICompatible({
    name: "polar",
    baseURL: "http://127.0.0.1:1/v1",
    fetch,
    includeUsage: true,
  }).chatModel("polar-policy");
}

/** The stream OpenCode's AI SDK parses: no error part, and the parts add up to our JSON answer. */
describe("openai chat codec: the AI SDK openai-compatible provider (OpenCode) reads our answers", () => {
  const { ctx } = encodeContext(openaiChatCodec, loadFixture("openai-chat", "opencode-main.request.json"));

  it.each(UPSTREAMS)("%s: doStream parts match encodeResponse", async (name) => {
    const chat = upstream("openai-chat", `${name}.json`);
    const expected = openaiChatCodec.encodeResponse(chat, ctx) as any;
    const want = expected.choices[0];
    const { stream } = await model(sseFetch(openaiChatCodec.encodeStream(chat, ctx))).doStream({ prompt });
    const parts: any[] = await readAll(stream);
    expect(parts.filter((p) => p.type === "error")).toEqual([]);
    const text = parts.filter((p) => p.type === "text-delta").map((p) => p.delta);
    expect(text.join("")).toBe(want.message.content ?? "");
    const reasoning = parts.filter((p) => p.type === "reasoning-delta").map((p) => p.delta);
    expect(reasoning.join("")).toBe(want.message.reasoning ?? "");
    const calls = parts.filter((p) => p.type === "tool-call").map((p) => [p.toolCallId, p.toolName, p.input]);
    expect(calls).toEqual(
      (want.message.tool_calls ?? []).map((c: any) => [c.id, c.function.name, c.function.arguments]),
    );
    const finish = parts.find((p) => p.type === "finish");
    expect(finish.finishReason.unified).toBe(UNIFIED_FINISH[want.finish_reason]);
    expect(finish.usage.inputTokens.total).toBe(expected.usage.prompt_tokens);
    expect(finish.usage.outputTokens.total).toBe(expected.usage.completion_tokens);
  });

  it.each(UPSTREAMS)("%s: doGenerate reads the JSON answer", async (name) => {
    const chat = upstream("openai-chat", `${name}.json`);
    const expected = openaiChatCodec.encodeResponse(chat, ctx) as any;
    const fetch = async () =>
      new Response(JSON.stringify(expected), { headers: { "content-type": "application/json" } });
    const result = await model(fetch).doGenerate({ prompt });
    const want = expected.choices[0];
    const byType = (type: string) => result.content.filter((c: any) => c.type === type) as any[];
    expect(
      byType("text")
        .map((c) => c.text)
        .join(""),
    ).toBe(want.message.content ?? "");
    expect(
      byType("reasoning")
        .map((c) => c.text)
        .join(""),
    ).toBe(want.message.reasoning ?? "");
    expect(byType("tool-call").map((c) => c.toolCallId)).toEqual(
      (want.message.tool_calls ?? []).map((c: any) => c.id),
    );
    expect(result.finishReason.unified).toBe(UNIFIED_FINISH[want.finish_reason]);
  });
});

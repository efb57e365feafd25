// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../../../proxy-worker/chat/types.ts";
import { CodecError } from "../../../proxy-worker/codecs/codec.ts";
import { openaiChatCodec } from "../../../proxy-worker/codecs/openai-chat/index.ts";
import { dataPayloads, encodeContext, fixtureDir, loadFixture, upstream } from "./openai-codec-fixtures.ts";

const REQUESTS = ["qwen-code-stream", "opencode-title", "opencode-main", "pi"];
const UPSTREAMS = ["upstream-text", "upstream-parallel-tool-calls", "upstream-reasoning", "upstream-length"];
const ENGINE_FIELDS = [
  "prompt_token_ids",
  "token_ids",
  "prompt_logprobs",
  "kv_transfer_params",
  "stop_reason",
];
const dir = fixtureDir("openai-chat");

function decode(name: string, maxModelLen?: number) {
  const body = loadFixture("openai-chat", `${name}.request.json`);
  return openaiChatCodec.decodeRequest(body, {
    path: "/v1/chat/completions",
    query: new URLSearchParams(),
    maxModelLen,
  });
}

function keysDeep(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const v of value) keysDeep(v, out);
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.add(k);
      keysDeep(v, out);
    }
  }
  return out;
}

describe("openai chat codec: requests from real harnesses", () => {
  it.each(REQUESTS)("%s decodes to the recorded upstream body", async (name) => {
    const decoded = decode(name);
    expect(decoded.chat.stream).toBe(false);
    expect(decoded.chat).not.toHaveProperty("stream_options");
    expect(decoded.chat).not.toHaveProperty("max_completion_tokens");
    await expect(JSON.stringify(decoded, null, 2) + "\n").toMatchFileSnapshot(
      `${dir}expected/${name}.decoded.json`,
    );
  });

  it("Qwen Code: stream with usage, history reasoning_content becomes reasoning, budget kept", () => {
    const decoded = decode("qwen-code-stream");
    expect(decoded.stream).toBe(true);
    expect(decoded.state).toEqual({ logprobs: false, includeUsage: true });
    expect(decoded.chat.max_tokens).toBe(32000);
    const assistant = decoded.chat.messages[4];
    expect(assistant.reasoning).toBe("The user wants a file. I will use the shell.");
    expect(assistant).not.toHaveProperty("reasoning_content");
    expect(assistant.tool_calls?.[0].id).toBe("call_q1");
  });

  it("clamps a budget larger than the context (32000 asked, 32768 context)", () => {
    const max = decode("qwen-code-stream", 32768).chat.max_tokens as number;
    expect(max).toBeLessThan(32000);
    expect(max).toBeGreaterThan(1024);
  });

  it("Pi: developer -> system, max_completion_tokens -> max_tokens, effort kept", () => {
    const chat = decode("pi").chat;
    expect(chat.messages[0].role).toBe("system");
    expect(chat.max_tokens).toBe(16384);
    expect(chat.reasoning_effort).toBe("medium");
    expect(chat.messages[2].reasoning).toBe("I should run a shell command.");
    expect(chat.messages[2].content).toBeNull();
  });

  it("OpenCode: content parts and parallel tool calls pass through", () => {
    const chat = decode("opencode-main").chat;
    expect(chat.messages[2].content).toEqual([
      { type: "text", text: "Create hello.txt containing the word hello." },
    ]);
    expect(chat.messages[3].tool_calls?.map((c) => c.id)).toEqual(["call_o1", "call_o2"]);
    expect(chat.tool_choice).toBe("auto");
  });

  it("drops tool_choice without tools and turns effort none into enable_thinking false", () => {
    const chat: ChatRequest = openaiChatCodec.decodeRequest(
      {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        tool_choice: "auto",
        reasoning_effort: "none",
        stop: "END",
      },
      { path: "/v1/chat/completions", query: new URLSearchParams() },
    ).chat;
    expect(chat).not.toHaveProperty("tool_choice");
    expect(chat).not.toHaveProperty("reasoning_effort");
    expect(chat.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(chat.stop).toEqual(["END"]);
  });

  it.each([
    [{ messages: [{ role: "user", content: "x" }] }, "model"],
    [{ model: "m", messages: [] }, "messages"],
    [{ model: "m", messages: [{ role: "wizard", content: "x" }] }, "messages[0].role"],
    [{ model: "m", messages: [{ role: "user", content: 5 }] }, "messages[0].content"],
    [{ model: "m", messages: [{ role: "user", content: "x" }], max_tokens: -3 }, "max_tokens"],
    [
      {
        model: "m",
        messages: [{ role: "assistant", content: null, tool_calls: [{ id: "a", function: { name: "f" } }] }],
      },
      "messages[0].tool_calls[0].function.arguments",
    ],
  ])("refuses %j naming %s", (body, param) => {
    try {
      openaiChatCodec.decodeRequest(body, { path: "/v1/chat/completions", query: new URLSearchParams() });
      expect.unreachable("decodeRequest accepted a bad body");
    } catch (error) {
      expect(error).toBeInstanceOf(CodecError);
      expect((error as CodecError).status).toBe(400);
      expect((error as CodecError).param).toBe(param);
      expect((error as CodecError).message).toContain(param);
    }
  });
});

describe("openai chat codec: answers", () => {
  it.each(UPSTREAMS)("%s: JSON answer without engine fields", async (name) => {
    const { ctx } = encodeContext(
      openaiChatCodec,
      loadFixture("openai-chat", "qwen-code-stream.request.json"),
    );
    const answer = openaiChatCodec.encodeResponse(upstream("openai-chat", `${name}.json`), ctx) as Record<
      string,
      any
    >;
    const keys = keysDeep(answer);
    for (const field of ENGINE_FIELDS) expect(keys.has(field), field).toBe(false);
    expect(answer.model).toBe("Qwen/Qwen3-8B");
    expect(answer.choices[0].logprobs).toBeNull();
    await expect(JSON.stringify(answer, null, 2) + "\n").toMatchFileSnapshot(
      `${dir}expected/${name}.response.json`,
    );
  });

  it("keeps logprobs only when the client asked", () => {
    const body = { model: "m", messages: [{ role: "user", content: "hi" }], logprobs: true, top_logprobs: 2 };
    const { ctx, decoded } = encodeContext(openaiChatCodec, body);
    expect(decoded.chat.top_logprobs).toBe(2);
    const answer = openaiChatCodec.encodeResponse(upstream("openai-chat", "upstream-text.json"), ctx) as any;
    expect(answer.choices[0].logprobs.content.map((t: { token: string }) => t.token).join("")).toBe(
      "Done: hello.txt contains hello.",
    );
  });

  it("maps finish reasons and exposes reasoning under both names", () => {
    const { ctx } = encodeContext(openaiChatCodec, {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
    });
    const length = openaiChatCodec.encodeResponse(
      upstream("openai-chat", "upstream-length.json"),
      ctx,
    ) as any;
    expect(length.choices[0].finish_reason).toBe("length");
    expect(length.choices[0].message.reasoning).toBe("Let me think about this at length");
    expect(length.choices[0].message.reasoning_content).toBe("Let me think about this at length");
    const tools = openaiChatCodec.encodeResponse(
      upstream("openai-chat", "upstream-parallel-tool-calls.json"),
      ctx,
    ) as any;
    expect(tools.choices[0].finish_reason).toBe("tool_calls");
    expect(tools.usage).toEqual({
      prompt_tokens: 1500,
      completion_tokens: 60,
      total_tokens: 1560,
      prompt_tokens_details: { cached_tokens: 1024 },
    });
  });

  it.each(UPSTREAMS)("%s: stream frames in the order clients need", async (name) => {
    const { ctx } = encodeContext(openaiChatCodec, loadFixture("openai-chat", "opencode-main.request.json"));
    const chat = upstream("openai-chat", `${name}.json`);
    const frames = openaiChatCodec.encodeStream(chat, ctx);
    for (const frame of frames) expect(frame).toMatch(/^data: .*\n\n$/s);
    const payloads = dataPayloads(frames);
    expect(payloads.at(-1)).toBe("[DONE]");
    const chunks = payloads.slice(0, -1) as any[];
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.total_tokens).toBe(chat.usage?.total_tokens);
    const finish = chunks.at(-2);
    expect(finish.choices[0].finish_reason).toBe(
      (openaiChatCodec.encodeResponse(chat, ctx) as any).choices[0].finish_reason,
    );
    const seen = new Set<number>();
    for (const chunk of chunks) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (!seen.has(call.index)) {
          expect(call.id).toEqual(expect.any(String));
          expect(call.type).toBe("function");
          expect(call.function.name).toEqual(expect.any(String));
          seen.add(call.index);
        }
      }
    }
    expect(seen.size).toBe(chat.choices[0].message.tool_calls?.length ?? 0);
    const keys = keysDeep(chunks);
    for (const field of ENGINE_FIELDS) expect(keys.has(field), field).toBe(false);
    await expect(frames.join("")).toMatchFileSnapshot(`${dir}expected/${name}.chunks.txt`);
  });

  it("leaves the usage chunk out unless include_usage was asked", () => {
    const { ctx } = encodeContext(openaiChatCodec, loadFixture("openai-chat", "opencode-title.request.json"));
    const payloads = dataPayloads(
      openaiChatCodec.encodeStream(upstream("openai-chat", "upstream-text.json"), ctx),
    );
    expect(payloads.some((p) => typeof p === "object" && (p as any).choices.length === 0)).toBe(false);
    expect((payloads.at(-2) as any).choices[0].finish_reason).toBe("stop");
  });

  it("answers errors in the OpenAI envelope", () => {
    expect(openaiChatCodec.encodeError(400, "messages is required")).toEqual({
      error: { message: "messages is required", type: "invalid_request_error", param: null, code: null },
    });
    expect((openaiChatCodec.encodeError(401, "bad token") as any).error.type).toBe("authentication_error");
    expect((openaiChatCodec.encodeError(503, "upstream down") as any).error.type).toBe("server_error");
  });
});

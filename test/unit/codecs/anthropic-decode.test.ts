import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../proxy-worker/chat/types.ts";
import { anthropicCodec, countTokensToTokenizeBody } from "../../../proxy-worker/codecs/anthropic/index.ts";
import { CodecError, type RequestContext } from "../../../proxy-worker/codecs/codec.ts";
import { MISSING_TOOL_RESULT } from "../../../proxy-worker/codecs/common/pair-tool-results.ts";

const FIXTURES = new URL("../../../proxy-worker/codecs/anthropic/__fixtures__/", import.meta.url);
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(name, FIXTURES), "utf8"));
const ctx = (extra: Partial<RequestContext> = {}): RequestContext => ({
  path: "/v1/messages",
  query: new URLSearchParams("beta=true"),
  ...extra,
});
const decode = (body: unknown, extra: Partial<RequestContext> = {}) =>
  anthropicCodec.decodeRequest(body, ctx(extra));
const user = (content: unknown) => ({ role: "user", content });
const base = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  messages,
  ...extra,
});

describe("anthropic decode: Claude Code fixtures", () => {
  for (const name of ["claude-code-first-turn", "claude-code-tool-turn"]) {
    it(`${name} matches the recorded chat body`, async () => {
      const decoded = decode(fixture(`${name}.request.json`), { maxModelLen: 40960 });
      await expect(`${JSON.stringify(decoded, null, 2)}\n`).toMatchFileSnapshot(
        new URL(`expected/${name}.decoded.json`, FIXTURES).pathname,
      );
    });
  }

  it("drops the billing header, keeps the rest of the system prompt and keeps inline system items in place", () => {
    const { chat } = decode(fixture("claude-code-tool-turn.request.json"));
    const system = chat.messages[0];
    expect(system.role).toBe("system");
    expect(system.content).not.toContain("x-anthropic-billing-header");
    expect(system.content).toMatch(
      /^You are Claude Code, Anthropic's official CLI for Claude\.\n\nYou are an interactive/,
    );
    expect(system.content).not.toContain("Note: the user switched the output style");
    // The inline item Claude Code sent after the tool results is a system message where it was sent.
    const last = chat.messages[chat.messages.length - 1];
    expect(last).toEqual({ role: "system", content: "Note: the user switched the output style to concise." });
    expect(chat.messages.filter((m) => m.role === "system")).toHaveLength(2);
  });

  it("keeps all 12 tools, asks for a stream, clamps 128000 max_tokens to the context", () => {
    const decoded = decode(fixture("claude-code-first-turn.request.json"), { maxModelLen: 40960 });
    expect(decoded.stream).toBe(true);
    expect(decoded.chat.tools).toHaveLength(12);
    expect(decoded.chat.max_tokens).toBeLessThan(40960);
    expect(decoded.chat.max_tokens).toBeGreaterThan(1024);
    expect(decoded.chat.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(decoded.chat.reasoning_effort).toBe("high");
    expect(JSON.stringify(decoded.chat)).not.toContain("cache_control");
    // Without a known context length the request passes through.
    expect(decode(fixture("claude-code-first-turn.request.json")).chat.max_tokens).toBe(128000);
  });

  it("the first turn's chat messages are a prefix of the next turn's, system prompt included", () => {
    const first = decode(fixture("claude-code-first-turn.request.json")).chat.messages;
    const next = decode(fixture("claude-code-tool-turn.request.json")).chat.messages;
    // An inline system item of the later turn is interleaved where it was sent, so the earlier prompt
    // (and the sample after it) stays a prefix: merging it into the system prompt broke the chain.
    expect(next.slice(0, first.length)).toEqual(first);
  });

  it("puts tool results first, images after them, and maps ids back to the upstream ids", () => {
    const { chat } = decode(fixture("claude-code-tool-turn.request.json"));
    const roles = chat.messages.map((m) => m.role);
    expect(roles).toEqual(["system", "user", "assistant", "tool", "tool", "user", "system"]);
    const assistant = chat.messages[2];
    expect(assistant.reasoning).toBe("I should run the tests first and look at the file.");
    expect(assistant.tool_calls?.map((c) => c.id)).toEqual([
      "chatcmpl-tool-7f3a9c1e2b4d4e5f",
      "functions.Read:1",
    ]);
    expect(chat.messages[3]).toMatchObject({ tool_call_id: "chatcmpl-tool-7f3a9c1e2b4d4e5f" });
    expect(chat.messages[3].content).toMatch(/^\[tool error\] Exit code 1/);
    expect(chat.messages[4]).toMatchObject({ tool_call_id: "functions.Read:1" });
    const last = chat.messages[5].content as { type: string }[];
    expect(last.map((p) => p.type)).toEqual(["image_url", "text"]);
  });
});

describe("anthropic decode: rules", () => {
  it("strips a billing header line inside a string system prompt", () => {
    const { chat } = decode(
      base([user("hi")], {
        system: "x-anthropic-billing-header: cc_version=2.1; cch=1a2b3;\nYou are helpful.",
      }),
    );
    expect(chat.messages[0]).toEqual({ role: "system", content: "You are helpful." });
  });

  it("an assistant turn with only thinking or only empty text keeps valid content", () => {
    const { chat } = decode(
      base([
        user("a"),
        { role: "assistant", content: [{ type: "text", text: "" }] },
        user("b"),
        { role: "assistant", content: [{ type: "redacted_thinking", data: "xx" }] },
        user("c"),
      ]),
    );
    expect(chat.messages.filter((m) => m.role === "assistant")).toEqual([
      { role: "assistant", content: "" },
      { role: "assistant", content: "" },
    ]);
  });

  it("sends no thinking as a content part and no signature upstream", () => {
    const { chat } = decode(
      base([
        user("a"),
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "hmm", signature: "s" },
            { type: "text", text: "ok" },
          ],
        },
      ]),
    );
    expect(chat.messages[1]).toEqual({ role: "assistant", content: "ok", reasoning: "hmm" });
  });

  it("drops empty user text blocks and a user turn left empty", () => {
    const { chat } = decode(
      base([
        user([{ type: "text", text: "" }]),
        user([
          { type: "text", text: "hi" },
          { type: "text", text: "" },
        ]),
      ]),
    );
    expect(chat.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("turns base64 and url images into image_url parts", () => {
    const { chat } = decode(
      base([
        user([
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } },
          { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
          { type: "text", text: "what is this?" },
        ]),
      ]),
    );
    expect(chat.messages[0].content).toEqual([
      { type: "image_url", image_url: { url: "data:image/jpeg;base64,AAAA" } },
      { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      { type: "text", text: "what is this?" },
    ]);
  });

  it("gives a tool call without a result a placeholder result and drops a duplicate result", () => {
    const call = (id: string) => ({ type: "tool_use", id, name: "Bash", input: { command: "ls" } });
    const result = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "out" });
    const { chat } = decode(
      base([
        user("go"),
        { role: "assistant", content: [call("a"), call("b")] },
        user([result("a"), result("a"), { type: "text", text: "next" }]),
      ]),
    );
    const tools = chat.messages.filter((m) => m.role === "tool") as ChatMessage[];
    expect(tools.map((m) => [m.tool_call_id, m.content])).toEqual([
      ["a", "out"],
      ["b", MISSING_TOOL_RESULT],
    ]);
    expect(chat.messages.at(-1)).toEqual({ role: "user", content: "next" });
  });

  it("maps tool_choice only when tools remain, drops server tools, disables parallel calls", () => {
    const tools = [
      { name: "Bash", description: "run", input_schema: { type: "object", properties: {} } },
      { type: "web_search_20250305", name: "web_search", max_uses: 5 },
    ];
    const cases: [unknown, unknown][] = [
      [{ type: "auto" }, "auto"],
      [{ type: "any" }, "required"],
      [{ type: "none" }, "none"],
      [
        { type: "tool", name: "Bash" },
        { type: "function", function: { name: "Bash" } },
      ],
      [{ type: "tool", name: "web_search" }, undefined],
    ];
    for (const [choice, expected] of cases) {
      const { chat } = decode(base([user("x")], { tools, tool_choice: choice }));
      expect(chat.tools?.map((t) => t.function.name)).toEqual(["Bash"]);
      expect(chat.tool_choice).toEqual(expected);
    }
    const serverOnly = decode(base([user("x")], { tools: [tools[1]], tool_choice: { type: "any" } })).chat;
    expect(serverOnly.tools).toBeUndefined();
    expect(serverOnly.tool_choice).toBeUndefined();
    const noParallel = decode(
      base([user("x")], { tools, tool_choice: { type: "auto", disable_parallel_tool_use: true } }),
    );
    expect(noParallel.chat.parallel_tool_calls).toBe(false);
  });

  it("maps thinking and effort to enable_thinking and reasoning_effort", () => {
    const kw = (extra: Record<string, unknown>) => decode(base([user("x")], extra)).chat;
    expect(kw({ thinking: { type: "enabled", budget_tokens: 2048 } }).chat_template_kwargs).toEqual({
      enable_thinking: true,
    });
    expect(kw({ thinking: { type: "disabled" } }).chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(kw({}).chat_template_kwargs).toBeUndefined();
    expect(kw({ output_config: { effort: "max" } }).reasoning_effort).toBe("high");
    expect(kw({ output_config: { effort: "low" } }).reasoning_effort).toBe("low");
    expect(
      kw({ thinking: { type: "disabled" }, output_config: { effort: "high" } }).reasoning_effort,
    ).toBeUndefined();
  });

  it("clamps max_tokens to the room left, never below min(1024, context / 4)", () => {
    const long = "x".repeat(30000); // about 10000 estimated tokens
    const clamp = (maxModelLen: number, max_tokens: number) =>
      decode(base([user(long)], { max_tokens }), { maxModelLen }).chat.max_tokens;
    const room = clamp(32768, 128000);
    expect(room).toBeLessThan(32768 - 10000);
    expect(room).toBeGreaterThan(32768 - 10000 - 300);
    expect(clamp(8192, 128000)).toBe(1024);
    expect(clamp(2048, 128000)).toBe(512);
    expect(clamp(32768, 500)).toBe(500);
  });

  it("passes sampling options and metadata.user_id", () => {
    const { chat } = decode(
      base([user("x")], {
        temperature: 0.2,
        top_p: 0.9,
        top_k: 20,
        stop_sequences: ["</a>"],
        metadata: { user_id: "u1" },
      }),
    );
    expect(chat).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      top_k: 20,
      stop: ["</a>"],
      user: "u1",
      max_tokens: 1024,
    });
  });

  it("rejects wrong types with a 400 that names the field", () => {
    const bad: [unknown, string][] = [
      [{ messages: [] }, "model"],
      [base([user([{ type: "text", text: 5 }])]), "messages.0.content.0.text"],
      [
        base([{ role: "assistant", content: [{ type: "tool_use", name: "x", input: {} }] }]),
        "messages.0.content.0.id",
      ],
      [base([user("x")], { max_tokens: -1 }), "max_tokens"],
      // Found by the property test (seed 417672047): an image without a source inside a tool result.
      [
        base([user([{ type: "tool_result", tool_use_id: "t", content: [{ type: "image", text: "" }] }])]),
        "messages.0.content.0.content.0.type",
      ],
      [null, "body"],
    ];
    for (const [body, param] of bad) {
      let error: unknown;
      try {
        decode(body);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(CodecError);
      expect((error as CodecError).status).toBe(400);
      expect((error as CodecError).param).toBe(param);
      expect((error as CodecError).message).toContain(param);
    }
  });

  it("ignores unknown block types instead of failing", () => {
    const { chat } = decode(
      base([
        user([
          { type: "server_tool_use", id: "x" },
          { type: "text", text: "hi" },
        ]),
      ]),
    );
    expect(chat.messages).toEqual([{ role: "user", content: "hi" }]);
  });
});

describe("anthropic count_tokens", () => {
  it("builds the /tokenize body from the same prompt as a request", () => {
    const body = fixture("claude-code-tool-turn.request.json");
    const tokenize = countTokensToTokenizeBody({ ...body, max_tokens: undefined, stream: undefined });
    const { chat } = decode(body);
    expect(tokenize).toEqual({
      model: "claude-sonnet-4-5",
      messages: chat.messages,
      tools: chat.tools,
      add_generation_prompt: true,
      chat_template_kwargs: { enable_thinking: true },
    });
  });
});

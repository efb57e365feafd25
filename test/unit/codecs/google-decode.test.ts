import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CodecError, type RequestContext } from "../../../proxy-worker/codecs/codec.ts";
import { MISSING_TOOL_RESULT } from "../../../proxy-worker/codecs/common/pair-tool-results.ts";
import { googleCodec } from "../../../proxy-worker/codecs/google/index.ts";

const FIXTURES = new URL("../../../proxy-worker/codecs/google/__fixtures__/", import.meta.url);
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(name, FIXTURES), "utf8"));
const ctx = (extra: Partial<RequestContext> = {}): RequestContext => ({
  path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
  query: new URLSearchParams("alt=sse"),
  pathModel: "gemini-2.5-pro",
  pathStream: true,
  ...extra,
});
const decode = (body: unknown, extra: Partial<RequestContext> = {}) =>
  googleCodec.decodeRequest(body, ctx(extra));
const user = (...parts: unknown[]) => ({ role: "user", parts });
const model = (...parts: unknown[]) => ({ role: "model", parts });

describe("google decode: Gemini CLI fixtures", () => {
  const cases: [string, Partial<RequestContext>][] = [
    ["gemini-cli-stream", { maxModelLen: 32768 }],
    [
      "gemini-cli-routing",
      {
        path: "/v1beta/models/gemini-2.5-flash-lite:generateContent",
        pathModel: "gemini-2.5-flash-lite",
        pathStream: false,
        query: new URLSearchParams(),
      },
    ],
  ];
  for (const [name, extra] of cases) {
    it(`${name} matches the recorded chat body`, async () => {
      const decoded = decode(fixture(`${name}.request.json`), extra);
      await expect(`${JSON.stringify(decoded, null, 2)}\n`).toMatchFileSnapshot(
        new URL(`expected/${name}.decoded.json`, FIXTURES).pathname,
      );
    });
  }

  it("takes model and stream from the path and keeps only function tools", () => {
    const decoded = decode(fixture("gemini-cli-stream.request.json"));
    expect(decoded.model).toBe("gemini-2.5-pro");
    expect(decoded.chat.model).toBe("gemini-2.5-pro");
    expect(decoded.stream).toBe(true);
    expect(decoded.chat.tools?.map((t) => t.function.name)).toContain("run_shell_command");
    expect(decoded.chat.tools).toHaveLength(9);
    expect(decoded.chat.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(decoded.state).toEqual({ includeThoughts: true });
  });

  it("pairs history calls without ids with their responses by name, and keeps ids that exist", () => {
    const { chat } = decode(fixture("gemini-cli-stream.request.json"));
    const calls = chat.messages.flatMap((m) => m.tool_calls ?? []);
    const results = chat.messages.filter((m) => m.role === "tool");
    expect(calls.map((c) => [c.id, c.function.name])).toEqual([
      ["call_3_1", "run_shell_command"],
      ["call_3_2", "read_file"],
      ["chatcmpl-tool-4b1d2e3f5a6c7d8e", "replace"],
    ]);
    // The responses came in the other order: each still finds its own call.
    expect(results.map((m) => m.tool_call_id)).toEqual([
      "call_3_2",
      "call_3_1",
      "chatcmpl-tool-4b1d2e3f5a6c7d8e",
    ]);
    expect(results[0].content).toContain("return a + b - 1;");
    expect(JSON.stringify(chat)).not.toContain("thoughtSignature");
  });

  it("each earlier turn's chat messages are a prefix of the next turn's (prefix merging holds)", () => {
    const body = fixture("gemini-cli-stream.request.json") as { contents: { role: string }[] };
    const full = decode(body).chat.messages;
    body.contents.forEach((content, k) => {
      if (content.role !== "user") return;
      const earlier = decode({ ...body, contents: body.contents.slice(0, k + 1) }).chat.messages;
      expect(full.slice(0, earlier.length)).toEqual(earlier);
    });
  });

  it("the routing call asks for JSON with a lower-cased JSON schema", () => {
    const { chat, stream } = decode(fixture("gemini-cli-routing.request.json"), { pathStream: false });
    expect(stream).toBe(false);
    expect(chat.response_format).toEqual({
      type: "json_schema",
      json_schema: {
        name: "response",
        schema: {
          type: "object",
          properties: {
            reasoning: {
              type: "string",
              description: "A brief, step-by-step explanation for the model choice, referencing the rubric.",
            },
            model_choice: { type: "string", enum: ["flash", "pro"] },
          },
          required: ["reasoning", "model_choice"],
        },
      },
    });
    expect(chat.max_tokens).toBe(1024);
    expect(chat.temperature).toBe(0);
  });
});

describe("google decode: rules", () => {
  it("accepts snake_case as well as camelCase, without touching args or schemas", () => {
    const camel = decode({
      systemInstruction: { parts: [{ text: "sys" }] },
      contents: [user({ text: "hi" }), model({ functionCall: { name: "f", args: { some_arg: 1 } } })],
      tools: [
        {
          functionDeclarations: [
            { name: "f", parameters: { type: "OBJECT", properties: { file_path: { type: "STRING" } } } },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["f"] } },
      generationConfig: {
        maxOutputTokens: 99,
        topP: 0.5,
        stopSequences: ["x"],
        thinkingConfig: { thinkingBudget: 0 },
      },
    });
    const snake = decode({
      system_instruction: { parts: [{ text: "sys" }] },
      contents: [user({ text: "hi" }), model({ function_call: { name: "f", args: { some_arg: 1 } } })],
      tools: [
        {
          function_declarations: [
            { name: "f", parameters: { type: "OBJECT", properties: { file_path: { type: "STRING" } } } },
          ],
        },
      ],
      tool_config: { function_calling_config: { mode: "ANY", allowed_function_names: ["f"] } },
      generation_config: {
        max_output_tokens: 99,
        top_p: 0.5,
        stop_sequences: ["x"],
        thinking_config: { thinking_budget: 0 },
      },
    });
    expect(snake).toEqual(camel);
    expect(camel.chat.tools?.[0].function.parameters).toEqual({
      type: "object",
      properties: { file_path: { type: "string" } },
    });
    expect(camel.chat.tool_choice).toEqual({ type: "function", function: { name: "f" } });
    expect(camel.chat.messages[2].tool_calls?.[0].function.arguments).toBe('{"some_arg":1}');
    expect(camel.chat).toMatchObject({
      max_tokens: 99,
      top_p: 0.5,
      stop: ["x"],
      chat_template_kwargs: { enable_thinking: false },
    });
  });

  it("maps functionCallingConfig modes only when tools remain", () => {
    const tools = [{ functionDeclarations: [{ name: "f" }] }, { googleSearch: {} }];
    const choice = (mode: string, withTools = tools) =>
      decode({
        contents: [user({ text: "x" })],
        tools: withTools,
        toolConfig: { functionCallingConfig: { mode } },
      }).chat.tool_choice;
    expect([choice("AUTO"), choice("ANY"), choice("NONE"), choice("VALIDATED")]).toEqual([
      "auto",
      "required",
      "none",
      "auto",
    ]);
    expect(choice("ANY", [{ googleSearch: {} } as never])).toBeUndefined();
  });

  it("turns thought parts into reasoning, images into image_url, and skips empty text", () => {
    const { chat } = decode({
      contents: [
        user({ text: "" }, { inlineData: { mimeType: "image/png", data: "AAAA" } }, { text: "what?" }),
        model({ text: "thinking...", thought: true, thoughtSignature: "sig" }, { text: "" }),
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          { type: "text", text: "what?" },
        ],
      },
      { role: "assistant", content: "", reasoning: "thinking..." },
    ]);
  });

  it("sends non-image media as a text note instead of an image the engine would reject", () => {
    const { chat } = decode({
      contents: [
        user(
          { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
          { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/cat.jpg" } },
        ),
      ],
    });
    expect(chat.messages[0].content).toEqual([
      {
        type: "text",
        text: "[attachment of type application/pdf omitted: the model reads text and images only]",
      },
      { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
    ]);
  });

  it("pairs same-name parallel calls by order and fills a missing response", () => {
    const { chat } = decode({
      contents: [
        user({ text: "go" }),
        model(
          { functionCall: { name: "sh", args: { c: 1 } } },
          { functionCall: { name: "sh", args: { c: 2 } } },
        ),
        user({ functionResponse: { name: "sh", response: { output: "one" } } }),
      ],
    });
    expect(chat.messages.slice(2).map((m) => [m.tool_call_id, m.content])).toEqual([
      ["call_1_0", "one"],
      ["call_1_1", MISSING_TOOL_RESULT],
    ]);
  });

  it("unwraps {output} and {error} tool responses, keeps other shapes as JSON", () => {
    const { chat } = decode({
      contents: [
        user({ text: "go" }),
        model(
          { functionCall: { id: "a", name: "f" } },
          { functionCall: { id: "b", name: "f" } },
          { functionCall: { id: "c", name: "f" } },
        ),
        user(
          { functionResponse: { id: "a", name: "f", response: { output: "fine" } } },
          { functionResponse: { id: "b", name: "f", response: { error: "bad" } } },
          { functionResponse: { id: "c", name: "f", response: { n: 1, ok: true } } },
        ),
      ],
    });
    expect(chat.messages.slice(2).map((m) => m.content)).toEqual(["fine", "Error: bad", '{"n":1,"ok":true}']);
  });

  it("maps thinkingLevel to reasoning_effort and candidateCount to n", () => {
    const { chat } = decode({
      contents: [user({ text: "x" })],
      generationConfig: {
        candidateCount: 2,
        seed: 7,
        thinkingConfig: { thinkingLevel: "LOW" },
        responseMimeType: "application/json",
      },
    });
    expect(chat).toMatchObject({
      n: 2,
      seed: 7,
      reasoning_effort: "low",
      response_format: { type: "json_object" },
    });
  });

  it("rejects a body without contents or a model with a 400 naming the field", () => {
    const bad: [unknown, Partial<RequestContext>, string][] = [
      [{}, {}, "contents"],
      [{ contents: [{ parts: [{ text: 3 }] }] }, {}, "contents.0.parts.0.text"],
      [{ contents: [] }, { pathModel: undefined }, "model"],
    ];
    for (const [body, extra, param] of bad) {
      let error: unknown;
      try {
        decode(body, extra);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(CodecError);
      expect((error as CodecError).status).toBe(400);
      expect((error as CodecError).param).toBe(param);
    }
  });
});

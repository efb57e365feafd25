// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { CodecError } from "../../../proxy-worker/codecs/codec.ts";
import {
  openaiResponsesCodec,
  type ResponsesCodecState,
} from "../../../proxy-worker/codecs/openai-responses/index.ts";
import { dataPayloads, encodeContext, loadFixture, sseFetch, upstream } from "./openai-codec-fixtures.ts";

/*
 * Responses `namespace` tools, as Codex 0.169 sends an MCP server's tools. The fixtures were
 * recorded from the real Codex through the proxy (test/e2e/harness-mcp-codex.test.ts, trimmed:
 * fewer tools, shorter developer texts): turn 1 offers `mcp__notes` holding `write_note`, the
 * engine called `mcp__notes__write_note` (upstream-mcp-namespace-call.json), and turn 2 is what
 * Codex sent next: the call as `{namespace: "mcp__notes", name: "write_note"}` and its output.
 */
const ctxIn = { path: "/v1/responses", query: new URLSearchParams() };
const turn1 = loadFixture<Record<string, any>>(
  "openai-responses",
  "codex-0.169-mcp-namespace-turn1.request.json",
);
const turn2 = loadFixture<Record<string, any>>(
  "openai-responses",
  "codex-0.169-mcp-namespace-turn2.request.json",
);
const engineCall = upstream("openai-responses", "upstream-mcp-namespace-call.json");
const { ctx } = encodeContext(openaiResponsesCodec, turn1);

function decode(body: unknown) {
  const decoded = openaiResponsesCodec.decodeRequest(body, ctxIn);
  return { ...decoded, state: decoded.state as unknown as ResponsesCodecState };
}
const noteTool = (tool: Record<string, unknown>) => ({
  type: "namespace",
  name: "mcp__notes",
  tools: [tool],
});
const WRITE_NOTE = {
  type: "function",
  name: "write_note",
  description: "Write text to a file in the working directory.",
  parameters: { type: "object", properties: { path: { type: "string" } } },
};

describe("openai responses codec: namespace tools (Codex's MCP tools)", () => {
  it("turn 1: each namespace's tools reach the engine as <namespace>__<name> functions, described as offered", () => {
    const { chat, state } = decode(turn1);
    expect(chat.tools?.map((t) => t.function.name)).toEqual([
      "exec_command",
      "multi_agent_v1__spawn_agent",
      "multi_agent_v1__wait_agent",
      "mcp__notes__write_note",
    ]);
    const offered = turn1.tools.find((t: { name?: string }) => t.name === "mcp__notes").tools[0];
    expect(chat.tools?.[3].function).toEqual({
      name: "mcp__notes__write_note",
      description: offered.description,
      parameters: offered.parameters,
      strict: false,
    });
    expect(state.namespaced).toContainEqual({
      flat: "mcp__notes__write_note",
      namespace: "mcp__notes",
      name: "write_note",
    });
  });

  it("the engine's call is answered as a function_call with the namespace and the tool's own name", () => {
    const answer = openaiResponsesCodec.encodeResponse(engineCall, ctx) as any;
    const engine = engineCall.choices[0].message.tool_calls?.[0];
    expect(answer.output).toEqual([
      {
        type: "function_call",
        id: `fc_${engine?.id}`,
        status: "completed",
        call_id: engine?.id,
        name: "write_note",
        namespace: "mcp__notes",
        arguments: engine?.function.arguments,
      },
    ]);
    // What Codex sent back in turn 2 is that item, unchanged.
    const sentBack = turn2.input.find((i: { type: string }) => i.type === "function_call");
    expect(sentBack).toEqual(answer.output[0]);
  });

  it("streamed: added, arguments and done events carry it, and the openai SDK reads the same item", async () => {
    const frames = openaiResponsesCodec.encodeStream(engineCall, ctx);
    const events = dataPayloads(frames) as any[];
    const added = events.find((e) => e.type === "response.output_item.added");
    expect(added.item).toMatchObject({ type: "function_call", name: "write_note", namespace: "mcp__notes" });
    const done = events.find((e) => e.type === "response.output_item.done");
    expect(done.item).toEqual((openaiResponsesCodec.encodeResponse(engineCall, ctx) as any).output[0]);
    const client = new OpenAI({
      apiKey: "x",
      baseURL: "http://127.0.0.1:1/v1",
      maxRetries: 0,
      fetch: sseFetch(frames),
    });
    const final = await client.responses.stream({ model: "policy", input: "hi" }).finalResponse();
    expect(final.output[0]).toMatchObject({
      type: "function_call",
      name: "write_note",
      namespace: "mcp__notes",
    });
  });

  it("live stream (the engine's deltas as they come): the call item is named by namespace from its first event", () => {
    const encoder = openaiResponsesCodec.streamEncoder?.(ctx);
    if (!encoder) throw new Error("the Responses codec has a stream encoder");
    const engine = engineCall.choices[0].message.tool_calls?.[0];
    const head = { choice: 0, position: 0 } as const;
    const frames = [
      ...encoder.start({ id: engineCall.id, usage: null }),
      ...encoder.delta({
        kind: "tool_call",
        ...head,
        id: engine?.id,
        name: "mcp__notes__write_note",
        arguments: "",
      }),
      ...encoder.delta({ kind: "tool_call", ...head, arguments: '{"path": "hello.txt", ' }),
      ...encoder.delta({ kind: "tool_call", ...head, arguments: '"text": "hi\\n"}' }),
      ...encoder.finish(engineCall),
      ...encoder.terminal(),
    ];
    const events = dataPayloads(frames) as any[];
    const named = { type: "function_call", name: "write_note", namespace: "mcp__notes" };
    expect(events.find((e) => e.type === "response.output_item.added").item).toMatchObject(named);
    expect(events.filter((e) => e.type === "response.function_call_arguments.delta")).toHaveLength(2);
    const done = events.find((e) => e.type === "response.output_item.done").item;
    expect(done).toMatchObject({ ...named, arguments: engine?.function.arguments });
    expect(events.at(-1).response.output).toEqual([done]);
  });

  it("turn 2: the namespaced call in the history is the engine's own call again, so the conversation round-trips", () => {
    const { chat } = decode(turn2);
    const assistant = chat.messages.find((m) => m.role === "assistant");
    const produced = engineCall.choices[0].message.tool_calls?.[0];
    expect(assistant?.tool_calls).toEqual([
      { id: produced?.id, type: "function", function: produced?.function },
    ]);
    expect(chat.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: produced?.id });
    expect(chat.messages.at(-1)?.content).toContain("wrote hello.txt (3 bytes)");
  });

  it("a custom tool inside a namespace: offered with its input parameter, answered as custom_tool_call with the namespace", () => {
    const body = {
      model: "m",
      input: "go",
      tools: [
        {
          type: "namespace",
          name: "edit",
          description: "Editing.",
          tools: [{ type: "custom", name: "patch" }],
        },
      ],
    };
    const { chat, state } = decode(body);
    expect(chat.tools?.[0].function).toMatchObject({
      name: "edit__patch",
      parameters: { required: ["input"] },
    });
    const { ctx: customCtx } = encodeContext(openaiResponsesCodec, body);
    const call = {
      id: "c1",
      type: "function" as const,
      function: { name: "edit__patch", arguments: '{"input":"x"}' },
    };
    const answer = openaiResponsesCodec.encodeResponse(
      {
        ...engineCall,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: null, tool_calls: [call] },
            finish_reason: "tool_calls",
          },
        ],
      },
      customCtx,
    ) as any;
    expect(answer.output[0]).toMatchObject({
      type: "custom_tool_call",
      name: "patch",
      namespace: "edit",
      input: "x",
    });
    expect(state.customTools).toEqual(["edit__patch"]);
    const { id: _id, ...item } = answer.output[0];
    const next = decode({ ...body, input: [{ role: "user", content: "go" }, item] });
    expect(next.chat.messages[1].tool_calls?.[0].function).toEqual(call.function);
  });

  it.each([
    [{ type: "namespace", tools: [WRITE_NOTE] }, "tools[0].name"],
    [{ type: "namespace", name: "mcp__notes" }, "tools[0].tools"],
    [noteTool({ type: "web_search" }), "tools[0].tools[0].type"],
    [noteTool({ type: "function", description: "no name" }), "tools[0].tools[0].name"],
    [noteTool({ ...WRITE_NOTE, parameters: "not a schema" }), "tools[0].tools[0].parameters"],
  ])("a malformed namespace tool %j is a 400 naming %s", (tool, param) => {
    try {
      decode({ model: "m", input: "go", tools: [tool] });
      expect.unreachable("decodeRequest accepted a malformed namespace tool");
    } catch (error) {
      expect(error).toBeInstanceOf(CodecError);
      expect((error as CodecError).status).toBe(400);
      expect((error as CodecError).param).toBe(param);
    }
  });

  it("a flattened name that would name two tools is refused, not guessed", () => {
    for (const tools of [
      [{ ...WRITE_NOTE, name: "mcp__notes__write_note" }, noteTool(WRITE_NOTE)],
      [noteTool(WRITE_NOTE), noteTool(WRITE_NOTE)],
      [
        { type: "namespace", name: "a__b", tools: [{ ...WRITE_NOTE, name: "c" }] },
        { type: "namespace", name: "a", tools: [{ ...WRITE_NOTE, name: "b__c" }] },
      ],
    ]) {
      expect(() => decode({ model: "m", input: "go", tools })).toThrow(/names two tools/);
    }
  });

  it("a call item with an empty namespace is refused by name", () => {
    const item = { type: "function_call", call_id: "c", name: "write_note", namespace: "", arguments: "{}" };
    expect(() => decode({ model: "m", input: [item] })).toThrow(
      expect.objectContaining({ status: 400, param: "input[0].namespace" }),
    );
  });
});

// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../proxy-worker/chat/types.ts";
import { CodecError } from "../../../proxy-worker/codecs/codec.ts";
import {
  openaiResponsesCodec,
  type ResponsesCodecState,
} from "../../../proxy-worker/codecs/openai-responses/index.ts";
import { encodeContext, fixtureDir, loadFixture, upstream } from "./openai-codec-fixtures.ts";

const REQUESTS = [
  "codex-turn1",
  "codex-turn2",
  "codex-turn3",
  "codex-0.169-recorded-first-call",
  "codex-0.169-mcp-namespace-turn1",
  "codex-0.169-mcp-namespace-turn2",
];
const dir = fixtureDir("openai-responses");
const ctxIn = { path: "/v1/responses", query: new URLSearchParams() };

function decodeFixture(name: string, maxModelLen?: number) {
  return openaiResponsesCodec.decodeRequest(loadFixture("openai-responses", `${name}.request.json`), {
    ...ctxIn,
    maxModelLen,
  });
}

function decodeBody(body: Record<string, unknown>) {
  return openaiResponsesCodec.decodeRequest({ model: "m", ...body }, ctxIn);
}

function expectCodecError(body: Record<string, unknown>, param: string, text: string) {
  try {
    decodeBody(body);
    expect.unreachable("decodeRequest accepted a body it must refuse");
  } catch (error) {
    expect(error).toBeInstanceOf(CodecError);
    expect((error as CodecError).status).toBe(400);
    expect((error as CodecError).param).toBe(param);
    expect((error as CodecError).message).toContain(text);
  }
}

describe("openai responses codec: Codex requests", () => {
  it.each(REQUESTS)("%s decodes to the recorded upstream body", async (name) => {
    const decoded = decodeFixture(name);
    expect(decoded.stream).toBe(true);
    expect(decoded.chat.stream).toBe(false);
    await expect(JSON.stringify(decoded, null, 2) + "\n").toMatchFileSnapshot(
      `${dir}expected/${name}.decoded.json`,
    );
  });

  it("turn 1: instructions first, developer as system, 8 callable tools, web_search dropped", () => {
    const { chat, state } = decodeFixture("codex-turn1");
    // instructions + the developer item: one system message, as templates with a single system slot need.
    expect(chat.messages.map((m) => m.role)).toEqual(["system", "user", "user"]);
    expect(chat.messages[0].content).toMatch(/^You are Codex[\s\S]*\n\n<permissions instructions>/);
    const names = chat.tools?.map((t) => t.function.name);
    expect(names).toEqual([
      "exec_command",
      "write_stdin",
      "update_plan",
      "apply_patch",
      "view_image",
      "list_mcp_resources",
      "list_mcp_resource_templates",
      "read_mcp_resource",
    ]);
    const applyPatch = chat.tools?.[3].function;
    expect(applyPatch?.parameters).toMatchObject({
      properties: { input: { type: "string" } },
      required: ["input"],
    });
    expect(applyPatch?.description).toContain("begin_patch hunk+ end_patch");
    expect(state).toEqual({ customTools: ["apply_patch"], localShell: false, namespaced: [] });
    expect(chat.tool_choice).toBe("auto");
    expect(chat.parallel_tool_calls).toBe(false);
    expect(chat.reasoning_effort).toBe("medium");
    expect(chat.chat_template_kwargs).toEqual({ enable_thinking: true });
  });

  it("turn 2: reasoning joins its call, custom tool call and outputs become tool messages", () => {
    const { chat } = decodeFixture("codex-turn2");
    const tail = chat.messages.slice(3);
    expect(tail.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool"]);
    expect(tail[0].reasoning).toBe("The user wants hello.txt. I will create it with a shell command.");
    expect(tail[0].tool_calls?.[0]).toEqual({
      id: "chatcmpl-tool-9f8e7d6c",
      type: "function",
      function: { name: "exec_command", arguments: '{"cmd": "printf hello > hello.txt"}' },
    });
    expect(tail[1]).toMatchObject({ tool_call_id: "chatcmpl-tool-9f8e7d6c" });
    expect(JSON.parse(tail[2].tool_calls?.[0].function.arguments ?? "")).toEqual({
      input: "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello\n*** End Patch\n",
    });
    expect(tail[3].content).toBe("Success. Updated the following files:\nM hello.txt\n");
  });

  it("turn 3: reasoning + text + consecutive calls merge into ONE assistant message", () => {
    const { chat } = decodeFixture("codex-turn3");
    const merged = chat.messages[7];
    expect(merged.role).toBe("assistant");
    expect(merged.reasoning).toBe("Both files are fine; run two checks in parallel.");
    expect(merged.content).toBe("Checking the file twice.");
    expect(merged.tool_calls?.map((c) => c.id)).toEqual(["call_a", "call_b"]);
    expect(chat.messages[8]).toEqual({ role: "tool", tool_call_id: "call_a", content: "hello" });
    expect(chat.messages.slice(10).map((m) => [m.role, m.content])).toEqual([
      ["assistant", "hello.txt contains hello (5 bytes)."],
      ["user", "Thanks. Now say done."],
    ]);
    expect(chat.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(chat).not.toHaveProperty("reasoning_effort");
    expect(chat.max_tokens).toBe(2048);
    expect(chat.response_format).toMatchObject({
      type: "json_schema",
      json_schema: { name: "codex_output_schema", strict: true, schema: { required: ["done"] } },
    });
  });

  it("recorded Codex 0.169 call: developer items merged, web_search dropped, the namespace's tools flattened", () => {
    const { chat, state, stream } = decodeFixture("codex-0.169-recorded-first-call");
    expect(stream).toBe(true);
    expect(chat.messages.map((m) => m.role)).toEqual(["system", "user", "user"]);
    expect(chat.messages[0].content).toMatch(
      /^You are a coding agent running in the Codex CLI[\s\S]*<skills_instructions>/,
    );
    expect(chat.messages[2].content).toMatch(/^Create hello.txt/);
    expect(chat.tools?.map((t) => t.function.name)).toEqual([
      "exec_command",
      "write_stdin",
      "request_user_input",
      "view_image",
      "multi_agent_v1__close_agent",
      "multi_agent_v1__resume_agent",
      "multi_agent_v1__send_input",
      "multi_agent_v1__spawn_agent",
      "multi_agent_v1__wait_agent",
      "get_goal",
      "create_goal",
      "update_goal",
    ]);
    expect(chat.parallel_tool_calls).toBe(true);
    const { customTools, localShell, namespaced } = state as unknown as ResponsesCodecState;
    expect([customTools, localShell]).toEqual([[], false]);
    expect(namespaced.map((t) => t.namespace)).toEqual(Array(5).fill("multi_agent_v1"));
    for (const key of ["store", "include", "prompt_cache_key", "client_metadata", "reasoning"]) {
      expect(chat, key).not.toHaveProperty(key);
    }
  });

  it("clamps max_output_tokens to the context", () => {
    expect(decodeFixture("codex-turn3", 4096).chat.max_tokens).toBeLessThan(2048);
  });

  it("accepts a plain string input and images by URL; images in tool output follow as a user message", () => {
    expect(decodeBody({ input: "hi" }).chat.messages).toEqual([{ role: "user", content: "hi" }]);
    const { chat } = decodeBody({
      input: [
        {
          role: "user",
          content: [{ type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "low" }],
        },
        { type: "function_call", call_id: "c1", name: "view_image", arguments: "{}" },
        {
          type: "function_call_output",
          call_id: "c1",
          output: [
            { type: "input_text", text: "attached" },
            { type: "input_image", image_url: "data:image/png;base64,BBBB" },
          ],
        },
      ],
    });
    expect(chat.messages[0].content).toEqual([
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
    ]);
    expect(chat.messages.slice(1).map((m: ChatMessage) => m.role)).toEqual(["assistant", "tool", "user"]);
    expect(chat.messages[3].content).toEqual([
      { type: "image_url", image_url: { url: "data:image/png;base64,BBBB" } },
    ]);
  });

  it("local_shell is offered as a function and its history round-trips", () => {
    const { chat, state } = decodeBody({
      tools: [{ type: "local_shell" }],
      input: [
        {
          type: "local_shell_call",
          call_id: "ls1",
          status: "completed",
          action: { type: "exec", command: ["ls"], env: {} },
        },
        { type: "function_call_output", call_id: "ls1", output: "a.txt" },
      ],
    });
    expect(state).toEqual({ customTools: [], localShell: true, namespaced: [] });
    expect(chat.tools?.[0].function.name).toBe("local_shell");
    expect(chat.messages[0].tool_calls?.[0].function).toEqual({
      name: "local_shell",
      arguments: '{"command":["ls"]}',
    });
  });

  it.each([
    [{ previous_response_id: "resp_1", input: "hi" }, "previous_response_id", "stateless"],
    [
      { input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1" }] }] },
      "input[0].content[0].file_id",
      "file_id",
    ],
    [{ input: [{ type: "item_reference", id: "msg_1" }] }, "input[0].type", "item_reference"],
    [
      { input: [{ type: "function_call", call_id: "c", name: "f", arguments: {} }] },
      "input[0].arguments",
      "input item",
    ],
    [{ input: [{ type: "teleport" }] }, "input[0].type", "teleport"],
    [{ input: [] }, "input", "empty"],
    [{ input: "x", tools: [{ type: "function" }] }, "tools[0].name", "tool"],
    [{ input: "x", max_output_tokens: 0 }, "max_output_tokens", "max_output_tokens"],
  ])("refuses %j naming %s", (body, param, text) => expectCodecError(body, param, text));

  it("ignores store/include/prompt_cache_key/client_metadata/service_tier/truncation", () => {
    const { chat } = decodeBody({
      input: "hi",
      store: false,
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "k",
      client_metadata: { a: "b" },
      service_tier: "auto",
      truncation: "auto",
    });
    expect(Object.keys(chat).sort()).toEqual(["messages", "model", "stream"]);
  });
});

const UPSTREAMS = [
  "upstream-reasoning-exec",
  "upstream-apply-patch",
  "upstream-parallel-tool-calls",
  "upstream-text",
  "upstream-length",
];

describe("openai responses codec: answers", () => {
  const { ctx } = encodeContext(
    openaiResponsesCodec,
    loadFixture("openai-responses", "codex-turn1.request.json"),
  );

  it.each(UPSTREAMS)("%s: JSON answer", async (name) => {
    const answer = openaiResponsesCodec.encodeResponse(
      upstream("openai-responses", `${name}.json`),
      ctx,
    ) as any;
    expect(answer.object).toBe("response");
    expect(answer.id).toMatch(/^resp_/);
    expect(answer.created_at).toBe(ctx.now);
    for (const key of ["input_tokens", "output_tokens", "total_tokens"]) {
      expect(Number.isInteger(answer.usage[key]), key).toBe(true);
    }
    expect(JSON.stringify(answer)).not.toMatch(/token_ids|kv_transfer_params|prompt_logprobs/);
    await expect(JSON.stringify(answer, null, 2) + "\n").toMatchFileSnapshot(
      `${dir}expected/${name}.response.json`,
    );
  });

  it("items: rs_ with summary and our envelope, msg_, fc_, custom_tool_call for freeform tools", () => {
    const exec = openaiResponsesCodec.encodeResponse(
      upstream("openai-responses", "upstream-reasoning-exec.json"),
      ctx,
    ) as any;
    expect(exec.output.map((i: { type: string }) => i.type)).toEqual(["reasoning", "function_call"]);
    expect(exec.output[0].id).toBe("rs_9d2f4b6a8c0e1357");
    expect(exec.output[0].summary[0].text).toBe(
      "The user wants hello.txt. I will create it with a shell command.",
    );
    expect(exec.output[1]).toMatchObject({
      id: "fc_chatcmpl-tool-9f8e7d6c",
      call_id: "chatcmpl-tool-9f8e7d6c",
      status: "completed",
    });
    expect(exec.usage).toEqual({
      input_tokens: 5120,
      input_tokens_details: { cached_tokens: 4096 },
      output_tokens: 41,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 5161,
    });
    const patch = openaiResponsesCodec.encodeResponse(
      upstream("openai-responses", "upstream-apply-patch.json"),
      ctx,
    ) as any;
    expect(patch.output).toEqual([
      {
        type: "custom_tool_call",
        id: "ctc_chatcmpl-tool-5a4b3c2d",
        status: "completed",
        call_id: "chatcmpl-tool-5a4b3c2d",
        name: "apply_patch",
        input: "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello\n*** End Patch\n",
      },
    ]);
  });

  it("truncation is status incomplete with reason max_output_tokens", () => {
    const answer = openaiResponsesCodec.encodeResponse(
      upstream("openai-responses", "upstream-length.json"),
      ctx,
    ) as any;
    expect(answer.status).toBe("incomplete");
    expect(answer.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(answer.output.find((i: { type: string }) => i.type === "message").status).toBe("incomplete");
  });

  it.each(UPSTREAMS)("%s: what Codex sends back decodes to the message the engine produced", (name) => {
    const chat = upstream("openai-responses", `${name}.json`);
    const answer = openaiResponsesCodec.encodeResponse(chat, ctx) as any;
    // Codex keeps output items as history (without ids) and answers every call.
    const history = answer.output.map(({ id: _id, ...item }: Record<string, unknown>) => item);
    const outputs = answer.output
      .filter((i: { call_id?: string }) => i.call_id)
      .map((i: { type: string; call_id: string }) => ({
        type: i.type === "custom_tool_call" ? "custom_tool_call_output" : "function_call_output",
        call_id: i.call_id,
        output: "ok",
      }));
    const { chat: next } = decodeBody({ input: [{ role: "user", content: "go" }, ...history, ...outputs] });
    const assistant = next.messages[1];
    const produced = chat.choices[0].message;
    expect(assistant.role).toBe("assistant");
    expect(assistant.reasoning).toBe(produced.reasoning ?? produced.reasoning_content ?? undefined);
    expect(assistant.content || null).toBe(produced.content || null);
    expect(
      (assistant.tool_calls ?? []).map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]),
    ).toEqual(
      (produced.tool_calls ?? []).map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]),
    );
    expect(next.messages.slice(2).every((m) => m.role === "tool")).toBe(true);
  });

  it("errors use the OpenAI envelope", () => {
    expect(openaiResponsesCodec.encodeError(400, "previous_response_id is not supported")).toEqual({
      error: {
        message: "previous_response_id is not supported",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
  });
});

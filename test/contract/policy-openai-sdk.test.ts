/** The dry-run policy driven by the official `openai` SDK, streaming and not, as a harness would. */
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";

const tools: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "Bash",
      description: "Run a command",
      parameters: {
        type: "object",
        properties: { command: { type: "string" }, timeout: { type: "number" } },
        required: ["command"],
      },
    },
  },
];
const SCRIPT = scriptMessage([
  "shell: echo hi > hello.txt",
  "think: I should check the file",
  "shell: cat hello.txt",
  "say: Done.",
]);

/** vLLM-only request fields the SDK passes through untouched. */
type VllmExtras = { return_token_ids?: boolean; chat_template_kwargs?: Record<string, unknown> };
type VllmChoice = OpenAI.Chat.Completions.ChatCompletion.Choice & { token_ids?: number[] };
type VllmCompletion = OpenAI.Chat.Completions.ChatCompletion & {
  prompt_token_ids?: number[];
  choices: VllmChoice[];
};
type VllmMessage = OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning?: string | null };

let policy: PolicyServer;
let client: OpenAI;
beforeAll(async () => {
  policy = await startPolicy({ maxModelLen: 8192 });
  client = new OpenAI({ baseURL: `${policy.url}/v1`, apiKey: "dry-run", maxRetries: 0 });
});
afterAll(() => policy.close());
beforeEach(() => policy.resetCounts());

async function complete(messages: ChatCompletionMessageParam[], extra: Record<string, unknown> = {}) {
  const params = {
    model: "qwen3",
    messages,
    tools,
    ...extra,
  } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming & VllmExtras;
  return (await client.chat.completions.create(params)) as VllmCompletion;
}

/** Collects a stream the way a harness does: deltas concatenated, tool calls assembled by index. */
async function collectStream(messages: ChatCompletionMessageParam[], extra: Record<string, unknown> = {}) {
  const params = {
    model: "qwen3",
    messages,
    tools,
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  } as OpenAI.Chat.ChatCompletionCreateParamsStreaming & VllmExtras;
  const stream = await client.chat.completions.create(params);
  let content = "";
  let reasoning = "";
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  let promptIds: number[] | undefined;
  const ids: number[] = [];
  const calls: { id?: string; name?: string; arguments: string }[] = [];
  for await (const chunk of stream) {
    const raw = chunk as typeof chunk & { prompt_token_ids?: number[] };
    if (raw.prompt_token_ids) promptIds = raw.prompt_token_ids;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      const delta = choice.delta as typeof choice.delta & { reasoning?: string };
      content += delta.content ?? "";
      reasoning += delta.reasoning ?? "";
      for (const call of delta.tool_calls ?? []) {
        calls[call.index] ??= { arguments: "" };
        if (call.id) calls[call.index].id = call.id;
        if (call.function?.name) calls[call.index].name = call.function.name;
        calls[call.index].arguments += call.function?.arguments ?? "";
      }
      ids.push(...((choice as typeof choice & { token_ids?: number[] }).token_ids ?? []));
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { content, reasoning, finish, usage, promptIds, ids, calls };
}

describe("dry-run policy with the openai SDK", () => {
  it("follows the script turn by turn (non-streaming) until it says Done.", async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: "user", content: SCRIPT }];
    const first = await complete(messages);
    const call1 = first.choices[0].message.tool_calls?.[0];
    expect(first.choices[0].finish_reason).toBe("tool_calls");
    expect(first.choices[0].message.content).toBeNull();
    expect(call1?.type === "function" && call1.function.name).toBe("Bash");
    expect(call1?.type === "function" && JSON.parse(call1.function.arguments)).toEqual({
      command: "echo hi > hello.txt",
    });
    expect(call1?.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    // Not asked for: no token arrays, no logprobs.
    expect(first.prompt_token_ids).toBeUndefined();
    expect(first.choices[0].token_ids).toBeUndefined();
    expect(first.choices[0].logprobs).toBeNull();

    messages.push(first.choices[0].message, { role: "tool", tool_call_id: call1!.id, content: "" });
    const second = await complete(messages);
    const message2 = second.choices[0].message as VllmMessage;
    expect(message2.reasoning).toBe("I should check the file");
    const call2 = message2.tool_calls?.[0];
    expect(call2?.type === "function" && JSON.parse(call2.function.arguments)).toEqual({
      command: "cat hello.txt",
    });

    messages.push(second.choices[0].message, { role: "tool", tool_call_id: call2!.id, content: "hi\n" });
    const third = await complete(messages);
    expect(third.choices[0].message.content).toBe("Done.");
    expect(third.choices[0].finish_reason).toBe("stop");
    expect(third.usage?.total_tokens).toBe(
      (third.usage?.prompt_tokens ?? 0) + (third.usage?.completion_tokens ?? 0),
    );
    expect(policy.counts.chat_completions).toBe(3);
  });

  it("returns token ids and logprobs in vLLM's shapes when asked", async () => {
    const body = await complete([{ role: "user", content: SCRIPT }], {
      return_token_ids: true,
      logprobs: true,
      top_logprobs: 2,
    });
    const choice = body.choices[0];
    expect(body.prompt_token_ids?.length).toBe(body.usage?.prompt_tokens);
    expect(choice.token_ids?.length).toBe(body.usage?.completion_tokens);
    expect(choice.token_ids?.at(-1)).toBe(151645);
    const content = choice.logprobs?.content ?? [];
    expect(content).toHaveLength(choice.token_ids?.length ?? -1);
    expect(content[0].token).toBe("<tool_call>");
    expect(content.at(-1)?.token).toBe("<|im_end|>");
    for (const entry of content) {
      expect(entry.logprob).toBeLessThanOrEqual(-0.001);
      expect(entry.logprob).toBeGreaterThan(-3);
      expect(entry.top_logprobs).toHaveLength(2);
      expect(entry.top_logprobs[0].token).toBe(entry.token);
      expect(entry.bytes).toEqual([...new TextEncoder().encode(entry.token)]);
    }
    const asIds = await complete([{ role: "user", content: SCRIPT }], {
      logprobs: true,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
    });
    expect(asIds.choices[0].logprobs?.content?.map((c) => c.token)).toEqual(
      asIds.choices[0].token_ids?.map((id) => `token_id:${id}`),
    );
  });

  it("streams the same turn: same ids, reasoning, tool call and usage", async () => {
    const messages: ChatCompletionMessageParam[] = [
      { role: "user", content: SCRIPT },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "Bash", arguments: '{"command":"x"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "" },
    ];
    const whole = await complete(messages, { return_token_ids: true });
    const streamed = await collectStream(messages, { return_token_ids: true });
    const wholeCall = whole.choices[0].message.tool_calls?.[0];
    expect(streamed.promptIds).toEqual(whole.prompt_token_ids);
    expect(streamed.ids).toEqual(whole.choices[0].token_ids);
    expect(streamed.reasoning).toBe("I should check the file");
    expect(streamed.content).toBe("");
    expect(streamed.finish).toBe("tool_calls");
    expect(streamed.calls).toEqual([
      {
        id: wholeCall?.id,
        name: "Bash",
        arguments: wholeCall?.type === "function" ? wholeCall.function.arguments : "?",
      },
    ]);
    expect(streamed.usage?.completion_tokens).toBe(whole.usage?.completion_tokens);
  });

  it("streams text and assembles with the SDK's stream helper", async () => {
    const stream = client.chat.completions.stream({
      model: "qwen3",
      messages: [{ role: "user", content: scriptMessage(["think: easy", "say: All done here."]) }],
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].message.content).toBe("All done here.");
    expect(final.choices[0].finish_reason).toBe("stop");
    const plain = await collectStream([{ role: "user", content: "hello" }]);
    expect(plain.content).toBe("Hello from the Polar dry-run policy.");
    expect(plain.promptIds).toBeUndefined();
    expect(plain.ids).toEqual([]);
  });

  it("truncates at max_tokens with finish reason length, streamed and not", async () => {
    const messages: ChatCompletionMessageParam[] = [
      { role: "user", content: scriptMessage(["say: one two three four five six"]) },
    ];
    const whole = await complete(messages, { max_tokens: 3, return_token_ids: true });
    expect(whole.choices[0].finish_reason).toBe("length");
    expect(whole.choices[0].token_ids).toHaveLength(3);
    expect(whole.choices[0].message.content).toBe("one two three");
    const streamed = await collectStream(messages, { max_completion_tokens: 3, return_token_ids: true });
    expect(streamed.finish).toBe("length");
    expect(streamed.content).toBe("one two three");
    expect(streamed.ids).toEqual(whole.choices[0].token_ids);
  });

  it("lists the model with max_model_len and answers errors in vLLM's shape", async () => {
    const models = await client.models.list();
    const card = models.data[0] as OpenAI.Models.Model & { max_model_len?: number };
    expect(card.max_model_len).toBe(8192);

    const wrongType = complete([{ role: "user", content: "hi" }], { max_tokens: "many" });
    await expect(wrongType).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(wrongType).rejects.toMatchObject({ status: 400, param: "max_tokens" });
    await expect(complete([{ role: "user", content: "hi" }], { max_tokens: 9000 })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("maximum context length is 8192"),
    });

    const badJson = await fetch(`${policy.url}/v1/chat/completions`, { method: "POST", body: "{not json" });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({
      error: { type: "BadRequestError", code: 400, param: null },
    });
  });
});

describe("tokenize, detokenize and request counts", () => {
  it("round-trips a prompt and counts each endpoint", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${policy.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<Record<string, unknown>>);
    const tokenized = await post("/tokenize", { model: "m", prompt: "<|im_start|>user\nhi" });
    expect(tokenized.tokens).toEqual([151644, 872, 198, 6023]);
    expect(await post("/detokenize", { model: "m", tokens: tokenized.tokens })).toEqual({
      prompt: "<|im_start|>user\nhi",
    });
    expect(await post("/detokenize", { tokens: ["a"] })).toMatchObject({
      error: { code: 400, param: "tokens.0" },
    });
    const counts = await fetch(`${policy.url}/debug/requests`).then((r) => r.json());
    expect(counts).toEqual({ chat_completions: 0, tokenize: 1, detokenize: 2 });
    await fetch(`${policy.url}/debug/reset`, { method: "POST" });
    expect(policy.counts.tokenize).toBe(0);
  });
});

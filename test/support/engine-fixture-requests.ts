/**
 * The upstream requests the dry-run policy is held to the real engine on: what the proxy sends
 * (token ids and logprobs asked, streamed with usage, tools, thinking off, a token prompt on the
 * chat channel, `/tokenize` with messages). scripts/engine/record-vllm-fixtures.ts records vLLM's
 * answers; test/unit/dry-run-policy-conformance.test.ts compares the policy's answers to them.
 */
import { join } from "node:path";

export const ENGINE_FIXTURE_DIR = join(
  new URL("../../", import.meta.url).pathname,
  "dry-run-policy/__fixtures__/vllm-0.32",
);

export interface EngineFixtureRequest {
  name: string;
  path: string;
  body: Record<string, unknown>;
}

const SHELL = {
  type: "function",
  function: {
    name: "shell",
    description: "Run a shell command",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
};
const USER = [{ role: "user", content: "Say something." }];
// What engines/vllm.ts adds to every call.
const FLAGS = { model: "policy", logprobs: true, top_logprobs: 0, return_token_ids: true, max_tokens: 8 };

export const ENGINE_FIXTURE_REQUESTS: EngineFixtureRequest[] = [
  { name: "chat", path: "/v1/chat/completions", body: { ...FLAGS, messages: USER, stream: false } },
  {
    name: "chat-stream",
    path: "/v1/chat/completions",
    body: { ...FLAGS, messages: USER, stream: true, stream_options: { include_usage: true } },
  },
  {
    name: "chat-tools",
    path: "/v1/chat/completions",
    body: { ...FLAGS, messages: USER, tools: [SHELL], stream: false },
  },
  {
    name: "chat-tools-stream",
    path: "/v1/chat/completions",
    body: { ...FLAGS, messages: USER, tools: [SHELL], stream: true, stream_options: { include_usage: true } },
  },
  {
    name: "chat-no-thinking",
    path: "/v1/chat/completions",
    body: { ...FLAGS, messages: USER, chat_template_kwargs: { enable_thinking: false }, stream: false },
  },
  {
    name: "chat-top-logprobs",
    path: "/v1/chat/completions",
    body: { ...FLAGS, top_logprobs: 2, messages: USER, stream: false },
  },
  {
    name: "chat-token-prompt",
    path: "/v1/chat/completions",
    body: {
      ...FLAGS,
      messages: USER,
      // The rendered prompt of USER (Qwen3 template, generation prompt), sent as ids.
      kv_transfer_params: {
        prompt_token_ids: [151644, 872, 198, 45764, 2494, 13, 151645, 198, 151644, 77091, 198],
      },
      stream: false,
    },
  },
  {
    name: "tokenize-messages",
    path: "/tokenize",
    body: { model: "policy", messages: USER, add_generation_prompt: true },
  },
];

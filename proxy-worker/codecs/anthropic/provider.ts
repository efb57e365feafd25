import { isObject } from "../../engines/engine.ts";
import { asArray, pick } from "../common/sft-conversation.ts";
import type { ProviderModule } from "../provider-module.ts";
import { countTokensToTokenizeBody } from "./count-tokens.ts";
import { encodeAnthropicRateLimit } from "./errors.ts";
import { anthropicCodec } from "./index.ts";
import { anthropicModelList } from "./model-list.ts";

const VERSION_HEADER = "anthropic-version";

/** Anthropic Messages: the codec plus its routes, token counting, model list and SFT shape. */
export const anthropicProvider: ProviderModule<"anthropic"> = {
  ...anthropicCodec,
  provider: "anthropic",
  matchRoute(method, path, headers) {
    if (method === "POST" && path === "/v1/messages") return { kind: "generate" };
    if (method === "POST" && path === "/v1/messages/count_tokens") return { kind: "count_tokens" };
    // `/v1/models` is shared with OpenAI; Anthropic's SDKs always send their version header.
    if (method === "GET" && path === "/v1/models" && headers.has(VERSION_HEADER))
      return { kind: "list_models" };
    return null;
  },
  hints: {
    header: (headers) => headers.has(VERSION_HEADER),
    path: () => false,
    body: () => false,
  },
  served: ["POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models"],
  countTokens: {
    tokenizeBody: (body) => countTokensToTokenizeBody(body),
    encodeCount: (count) => ({ input_tokens: count }),
  },
  parallelToolCallsDisabled: (body) =>
    isObject(body.tool_choice) && body.tool_choice.disable_parallel_tool_use === true,
  listModels: anthropicModelList,
  encodeRateLimit: encodeAnthropicRateLimit,
  sftConversation: (req, answer) => ({
    ...pick(req, "system"),
    messages: [...asArray(req.messages, "request.messages"), { role: "assistant", content: answer.content }],
    ...pick(req, "tools"),
  }),
};

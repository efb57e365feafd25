import { openaiRateLimitEnvelope } from "../common/openai-error-envelope.ts";
import { asArray, pick } from "../common/sft-conversation.ts";
import { openaiModelList } from "../common/upstream-model.ts";
import type { ProviderModule } from "../provider-module.ts";
import { openaiChatCodec } from "./index.ts";

/** OpenAI Chat Completions: the codec plus its routes, model list and SFT shape. */
export const openaiChatProvider: ProviderModule<"openai_chat"> = {
  ...openaiChatCodec,
  provider: "openai_chat",
  matchRoute(method, path) {
    if (method === "POST" && path === "/v1/chat/completions") return { kind: "generate" };
    if (method === "GET" && path === "/v1/models") return { kind: "list_models" };
    return null;
  },
  hints: { header: () => false, path: () => false, body: () => false },
  served: ["POST /v1/chat/completions", "GET /v1/models"],
  countTokens: null,
  parallelToolCallsDisabled: (body) => body.parallel_tool_calls === false,
  listModels: openaiModelList,
  encodeRateLimit: openaiRateLimitEnvelope,
  sftConversation(req, answer) {
    const choice = asArray(answer.choices, "choices")[0] as { message?: unknown } | undefined;
    if (!choice?.message) throw new Error("the answer has no choices[0].message");
    return {
      messages: [...asArray(req.messages, "request.messages"), choice.message],
      ...pick(req, "tools"),
    };
  },
};

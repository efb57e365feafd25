import { openaiRateLimitEnvelope } from "../common/openai-error-envelope.ts";
import { asArray, pick } from "../common/sft-conversation.ts";
import { openaiModelList } from "../common/upstream-model.ts";
import type { ProviderModule } from "../provider-module.ts";
import { openaiResponsesCodec } from "./index.ts";

/** OpenAI Responses: the codec plus its routes, model list and SFT shape. */
export const openaiResponsesProvider: ProviderModule<"openai_responses"> = {
  ...openaiResponsesCodec,
  provider: "openai_responses",
  matchRoute(method, path) {
    if (method === "POST" && path === "/v1/responses") return { kind: "generate" };
    return null;
  },
  hints: {
    header: () => false,
    path: (path) => path.includes("/responses"),
    body: (body) => "input" in body,
  },
  served: ["POST /v1/responses"],
  countTokens: null,
  parallelToolCallsDisabled: (body) => body.parallel_tool_calls === false,
  listModels: openaiModelList,
  encodeRateLimit: openaiRateLimitEnvelope,
  sftConversation(req, answer) {
    // `input` may be a bare string: the Responses API's shorthand for one user message.
    const input =
      typeof req.input === "string"
        ? [{ role: "user", content: req.input }]
        : asArray(req.input, "request.input");
    return {
      ...pick(req, "instructions"),
      input: [...input, ...asArray(answer.output, "output")],
      ...pick(req, "tools"),
    };
  },
};

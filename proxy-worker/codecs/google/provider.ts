import type { RequestContext } from "../codec.ts";
import { safeDecode } from "../common/safe-decode.ts";
import { asArray, pick } from "../common/sft-conversation.ts";
import type { ProviderModule } from "../provider-module.ts";
import { encodeGoogleRateLimit } from "./errors.ts";
import { googleCodec } from "./index.ts";
import { googleModelList } from "./model-list.ts";

// Google puts the model in the path; a model with a `/` (e.g. `Qwen/Qwen3-8B`) arrives unescaped.
const METHOD_PATH =
  /^\/(?:v1beta|v1|v1alpha)\/models\/(.+):(generateContent|streamGenerateContent|countTokens)$/;
const MODELS_PATH = /^\/(?:v1beta|v1alpha)\/models\/?$/;

/** countTokens carries a generateContent body, bare or under `generateContentRequest`. */
function tokenizeBody(body: unknown, ctx: RequestContext): Record<string, unknown> {
  const inner =
    body && typeof body === "object" && "generateContentRequest" in body
      ? (body as { generateContentRequest: unknown }).generateContentRequest
      : body;
  const { chat } = googleCodec.decodeRequest(inner, ctx);
  return {
    model: chat.model,
    messages: chat.messages,
    ...(chat.tools ? { tools: chat.tools } : {}),
    ...(chat.chat_template_kwargs ? { chat_template_kwargs: chat.chat_template_kwargs } : {}),
    add_generation_prompt: true,
  };
}

/** Google generateContent: the codec plus its routes, token counting, model list and SFT shape. */
export const googleProvider: ProviderModule<"google"> = {
  ...googleCodec,
  provider: "google",
  matchRoute(method, path) {
    if (method === "GET" && MODELS_PATH.test(path)) return { kind: "list_models" };
    if (method !== "POST") return null;
    const m = METHOD_PATH.exec(path);
    if (!m) return null;
    const pathModel = safeDecode(m[1]).replace(/^models\//, "");
    if (m[2] === "countTokens") return { kind: "count_tokens", pathModel };
    return { kind: "generate", pathModel, pathStream: m[2] === "streamGenerateContent" };
  },
  hints: {
    header: (headers) => headers.has("x-goog-api-key"),
    path: (path) => path.startsWith("/v1beta/"),
    body: (body) => "contents" in body,
  },
  served: [
    "POST /v1beta/models/{model}:generateContent|streamGenerateContent|countTokens",
    "GET /v1beta/models",
  ],
  countTokens: { tokenizeBody, encodeCount: (count) => ({ totalTokens: count }) },
  // Google's API has no switch for parallel function calls.
  parallelToolCallsDisabled: () => false,
  listModels: googleModelList,
  encodeRateLimit: encodeGoogleRateLimit,
  sftConversation(req, answer) {
    const candidate = asArray(answer.candidates, "candidates")[0] as { content?: unknown } | undefined;
    if (!candidate?.content) throw new Error("the answer has no candidates[0].content");
    return {
      ...pick(req, "systemInstruction", "system_instruction"),
      contents: [...asArray(req.contents, "request.contents"), candidate.content],
      ...pick(req, "tools"),
    };
  },
};

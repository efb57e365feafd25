import { countTokensToTokenizeBody } from "./codecs/anthropic/index.ts";
import type { RequestContext } from "./codecs/codec.ts";
import type { TokenizeBodyBuilder } from "./count-tokens.ts";
import type { Gateway } from "./deps.ts";

/**
 * How each provider's count request becomes an upstream `/tokenize` body. Google's countTokens carries
 * a generateContent body (bare or under `generateContentRequest`), so its codec translates it;
 * Anthropic's codec exports its own builder (count_tokens bodies have no `max_tokens`).
 */
export function tokenizeBodyBuilders(
  g: Gateway,
  provider: "anthropic" | "google",
  ctx: RequestContext,
): TokenizeBodyBuilder | null {
  const codec = g.codecs[provider];
  if (!codec) return null;
  if (provider === "google") {
    return (body) => {
      const inner =
        body && typeof body === "object" && "generateContentRequest" in body
          ? (body as { generateContentRequest: unknown }).generateContentRequest
          : body;
      const { chat } = codec.decodeRequest(inner, ctx);
      return {
        model: chat.model,
        messages: chat.messages,
        ...(chat.tools ? { tools: chat.tools } : {}),
        ...(chat.chat_template_kwargs ? { chat_template_kwargs: chat.chat_template_kwargs } : {}),
        add_generation_prompt: true,
      };
    };
  }
  return countTokensToTokenizeBody;
}

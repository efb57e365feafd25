import type { Provider } from "../../shared/schemas/capture.ts";
import { anthropicCodec } from "./anthropic/index.ts";
import type { ProviderCodec } from "./codec.ts";
import { googleCodec } from "./google/index.ts";
import { openaiChatCodec } from "./openai-chat/index.ts";
import { openaiResponsesCodec } from "./openai-responses/index.ts";

/** Provider -> codec. A provider without a codec is answered 501 in OpenAI's error shape. */
export type CodecRegistry = Partial<Record<Provider, ProviderCodec>>;

export const defaultCodecs: CodecRegistry = {
  anthropic: anthropicCodec,
  openai_chat: openaiChatCodec,
  openai_responses: openaiResponsesCodec,
  google: googleCodec,
};

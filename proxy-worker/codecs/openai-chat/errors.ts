import { type OpenAIErrorEnvelope, openaiErrorEnvelope } from "../common/openai-error-envelope.ts";

/** `{"error":{"message","type","param","code"}}`, what the openai SDK turns into APIError subclasses. */
export function encodeChatError(status: number, message: string, param?: string): OpenAIErrorEnvelope {
  return openaiErrorEnvelope(status, message, param);
}

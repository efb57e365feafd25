import { type OpenAIErrorEnvelope, openaiErrorEnvelope } from "../common/openai-error-envelope.ts";

/** Responses errors use the same envelope as Chat Completions; Codex reads `error.code` for context overflow. */
export function encodeResponsesError(status: number, message: string, param?: string): OpenAIErrorEnvelope {
  return openaiErrorEnvelope(status, message, param);
}

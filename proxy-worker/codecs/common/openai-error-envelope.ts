/** OpenAI's error `type` for an HTTP status (the SDKs map status to error classes; `type` is for humans and logs). */
function openaiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export interface OpenAIErrorEnvelope {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The error body both OpenAI APIs (Chat Completions and Responses) answer with. */
export function openaiErrorEnvelope(
  status: number,
  message: string,
  param?: string,
  code?: string,
): OpenAIErrorEnvelope {
  return { error: { message, type: openaiErrorType(status), param: param ?? null, code: code ?? null } };
}

import type { ChatFinishReason } from "../../chat/types.ts";

export interface ResponsesStatus {
  status: "completed" | "incomplete";
  incomplete_details: { reason: "max_output_tokens" | "content_filter" } | null;
}

/** Chat finish reason -> Responses status. Truncation is `incomplete`, everything else finished. */
export function mapResponsesStatus(reason: ChatFinishReason | null): ResponsesStatus {
  if (reason === "length")
    return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (reason === "content_filter")
    return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

import type { ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import type { ResponsesCodecState } from "./convert-request.ts";
import { mapResponsesStatus } from "./map-finish-reason.ts";
import { buildOutputItems, type OutputItem } from "./output-items.ts";
import { responseIds } from "./response-ids.ts";

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "in_progress" | "completed" | "incomplete" | "failed";
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  model: string;
  output: OutputItem[];
  usage: ResponsesUsage | null;
}

export function responsesState(ctx: EncodeContext): ResponsesCodecState {
  const state = ctx.decoded.state as Partial<ResponsesCodecState> | undefined;
  return {
    customTools: state?.customTools ?? [],
    localShell: state?.localShell === true,
    namespaced: state?.namespaced ?? [],
  };
}

const int = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) ? Math.trunc(value) : 0;

/** Codex deserializes the three totals as integers and fails the turn otherwise: never null, never fractional. */
export function encodeResponsesUsage(chat: ChatResponse): ResponsesUsage {
  const usage = chat.usage;
  const input = int(usage?.prompt_tokens);
  const output = int(usage?.completion_tokens);
  const reasoning = (
    usage as { completion_tokens_details?: { reasoning_tokens?: unknown } | null } | null | undefined
  )?.completion_tokens_details?.reasoning_tokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: int(usage?.prompt_tokens_details?.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: int(reasoning) },
    total_tokens: input + output,
  };
}

/** The response shell shared by the JSON answer and every lifecycle event of the stream. */
export function responseShell(chat: ChatResponse, ctx: EncodeContext): ResponseObject {
  return {
    id: responseIds(chat.id).response,
    object: "response",
    created_at: ctx.now,
    status: "in_progress",
    error: null,
    incomplete_details: null,
    model: ctx.decoded.model,
    output: [],
    usage: null,
  };
}

/** The finished `response` object. Only the first choice is used: Responses has no `n`. */
export function encodeResponsesResponse(chat: ChatResponse, ctx: EncodeContext): ResponseObject {
  const choice = chat.choices?.[0];
  const { status, incomplete_details } = mapResponsesStatus(choice?.finish_reason ?? null);
  return {
    ...responseShell(chat, ctx),
    status,
    incomplete_details,
    output: buildOutputItems(chat.id, choice, responsesState(ctx), status),
    usage: encodeResponsesUsage(chat),
  };
}

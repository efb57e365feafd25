import type { ChatChoice, ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { derivedId } from "../common/derived-id.ts";
import { parseJsonObject } from "../common/parse-json-object.ts";
import { firstChoice, upstreamReasoning, upstreamText } from "../common/upstream-message.ts";
import type { GoogleState } from "./convert-request.ts";
import { mapFinishReason } from "./map-finish-reason.ts";

export type GoogleResponsePart =
  | { text: string; thought?: true }
  | { functionCall: { id: string; name: string; args: Record<string, unknown> } };

export interface GoogleCandidate {
  content: { role: "model"; parts: GoogleResponsePart[] };
  finishReason?: string;
  index: number;
}

export interface GoogleUsageMetadata {
  promptTokenCount: number;
  candidatesTokenCount: number;
  totalTokenCount: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
}

export interface GoogleResponseBody {
  candidates: GoogleCandidate[];
  usageMetadata?: GoogleUsageMetadata;
  modelVersion: string;
  responseId: string;
}

function includeThoughts(ctx: EncodeContext): boolean {
  return (ctx.decoded.state as GoogleState | undefined)?.includeThoughts === true;
}

/**
 * Parts in Gemini's order: thought, text, function calls. Empty text is skipped. functionCall.id is
 * the upstream tool-call id, so it comes back in functionResponse.id and goes upstream unchanged.
 */
export function buildParts(choice: ChatChoice, chatId: string, withThoughts: boolean): GoogleResponsePart[] {
  const parts: GoogleResponsePart[] = [];
  const reasoning = upstreamReasoning(choice);
  if (withThoughts && reasoning.length > 0) parts.push({ text: reasoning, thought: true });
  const text = upstreamText(choice);
  if (text.length > 0) parts.push({ text });
  (choice.message.tool_calls ?? []).forEach((call, index) => {
    parts.push({
      functionCall: {
        id: call.id || derivedId("call_", chatId, choice.index, index),
        name: call.function?.name ?? "",
        args: parseJsonObject(call.function?.arguments),
      },
    });
  });
  return parts;
}

/** Gemini counts thoughts apart from candidates; the three add up to the total. */
export function mapUsage(chat: ChatResponse): GoogleUsageMetadata {
  const prompt = chat.usage?.prompt_tokens ?? 0;
  const completion = chat.usage?.completion_tokens ?? 0;
  // Not in the typed ChatUsage: engines that count reasoning tokens report them here.
  const details = (
    chat.usage as { completion_tokens_details?: { reasoning_tokens?: number } } | null | undefined
  )?.completion_tokens_details;
  const thoughts = Math.min(completion, details?.reasoning_tokens ?? 0);
  const usage: GoogleUsageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: completion - thoughts,
    totalTokenCount: prompt + completion,
  };
  if (thoughts > 0) usage.thoughtsTokenCount = thoughts;
  const cached = chat.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  if (cached > 0) usage.cachedContentTokenCount = cached;
  return usage;
}

export function buildCandidates(chat: ChatResponse, ctx: EncodeContext): GoogleCandidate[] {
  const choices = chat.choices?.length ? chat.choices : [firstChoice(chat)];
  return choices.map((choice, position) => ({
    content: { role: "model", parts: buildParts(choice, chat.id, includeThoughts(ctx)) },
    finishReason: mapFinishReason(choice.finish_reason),
    index: choice.index ?? position,
  }));
}

export function buildResponse(chat: ChatResponse, ctx: EncodeContext): GoogleResponseBody {
  return {
    candidates: buildCandidates(chat, ctx),
    usageMetadata: mapUsage(chat),
    modelVersion: ctx.decoded.model,
    responseId: derivedId("", chat.id),
  };
}

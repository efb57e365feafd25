import type { ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { derivedId } from "../common/derived-id.ts";
import { sseFrame } from "../common/sse-frame.ts";
import { buildCandidates, type GoogleCandidate, mapUsage } from "./build-response.ts";

/**
 * `:streamGenerateContent?alt=sse` for a complete upstream answer: one `data:` record per part, in
 * part order, no `event:` lines, comments or `[DONE]` (@google/genai throws on leftovers). The last
 * record of a candidate carries its finishReason; the very last one also usageMetadata (Gemini CLI
 * fails with NO_FINISH_REASON otherwise).
 */
export function encodeGoogleStream(chat: ChatResponse, ctx: EncodeContext): string[] {
  const modelVersion = ctx.decoded.model;
  const responseId = derivedId("", chat.id);
  const candidates = buildCandidates(chat, ctx);
  const records: Record<string, unknown>[] = [];
  for (const candidate of candidates) {
    const parts = candidate.content.parts;
    // A candidate without parts still needs a record to carry its finish reason.
    const slices = parts.length > 0 ? parts.map((part) => [part]) : [[]];
    slices.forEach((slice, position) => {
      const piece: GoogleCandidate = { content: { role: "model", parts: slice }, index: candidate.index };
      if (position === slices.length - 1) piece.finishReason = candidate.finishReason;
      records.push({ candidates: [piece], modelVersion, responseId });
    });
  }
  records[records.length - 1].usageMetadata = mapUsage(chat);
  return records.map((record) => sseFrame(record));
}

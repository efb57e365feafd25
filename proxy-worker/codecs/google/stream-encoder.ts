import type { ChatResponse } from "../../chat/types.ts";
import type { ChatDelta, StreamEncoder, StreamHead } from "../../stream/chat-delta.ts";
import type { EncodeContext } from "../codec.ts";
import { derivedId } from "../common/derived-id.ts";
import { parseJsonObject } from "../common/parse-json-object.ts";
import { sseFrame } from "../common/sse-frame.ts";
import { firstChoice } from "../common/upstream-message.ts";
import type { GoogleCandidate, GoogleResponsePart } from "./build-response.ts";
import { mapUsage } from "./build-response.ts";
import type { GoogleState } from "./convert-request.ts";
import { encodeGoogleStreamError } from "./errors.ts";
import { mapFinishReason } from "./map-finish-reason.ts";

interface GoogleRecord {
  candidates: GoogleCandidate[];
  modelVersion: string;
  responseId: string;
  usageMetadata?: unknown;
}

interface PendingCall {
  candidate: number;
  position: number;
  id?: string;
  name: string;
  args: string;
}

/**
 * `:streamGenerateContent?alt=sse`, record by record: one `data:` record per part (thought, text, a
 * function call once its arguments are complete), no `event:` lines, comments or `[DONE]`
 * (@google/genai throws on leftovers). The last record of a candidate carries its finishReason and
 * the very last one also usageMetadata (Gemini CLI fails with NO_FINISH_REASON otherwise), so the
 * encoder holds one record back: the held record becomes the terminal event. A live stream releases
 * the held record after each engine chunk unless it already carries its finishReason (vLLM sends the
 * reason with the last token, so that record is the one held to the end), so the first byte is not
 * a token late. When a finish comes after the last part went out, it goes on a record without
 * parts, which Gemini CLI accepts (`isValidContent`: a model turn with no parts is valid).
 */
export function googleStreamEncoder(ctx: EncodeContext): StreamEncoder {
  const withThoughts = (ctx.decoded.state as GoogleState | undefined)?.includeThoughts === true;
  let chatId = "";
  let responseId = "";
  let held: GoogleRecord | null = null;
  let pending: PendingCall | null = null;

  const record = (candidate: number, parts: GoogleResponsePart[]): GoogleRecord => ({
    candidates: [{ content: { role: "model", parts }, index: candidate }],
    modelVersion: ctx.decoded.model,
    responseId,
  });
  const push = (next: GoogleRecord): string[] => {
    const out = held ? [sseFrame(held)] : [];
    held = next;
    return out;
  };
  const flushCall = (): string[] => {
    const call = pending;
    if (!call) return [];
    pending = null;
    const id = call.id || derivedId("call_", chatId, call.candidate, call.position);
    return push(
      record(call.candidate, [{ functionCall: { id, name: call.name, args: parseJsonObject(call.args) } }]),
    );
  };

  return {
    start(head: StreamHead) {
      chatId = head.id;
      responseId = derivedId("", chatId);
      return [];
    },
    delta(d: ChatDelta) {
      switch (d.kind) {
        case "reasoning":
          if (!withThoughts || d.text === "") return [];
          return [...flushCall(), ...push(record(d.choice, [{ text: d.text, thought: true }]))];
        case "content":
          if (d.text === "") return [];
          return [...flushCall(), ...push(record(d.choice, [{ text: d.text }]))];
        case "tool_call": {
          if (pending && pending.candidate === d.choice && pending.position === d.position) {
            pending.args += d.arguments;
            return [];
          }
          const out = flushCall();
          pending = {
            candidate: d.choice,
            position: d.position,
            id: d.id,
            name: d.name ?? "",
            args: d.arguments,
          };
          return out;
        }
        case "finish": {
          const out = flushCall();
          const reason = mapFinishReason(d.reason);
          const last = held?.candidates[0];
          if (last && last.index === d.choice && last.finishReason === undefined) {
            last.finishReason = reason;
            return out;
          }
          // A candidate without parts (or whose last part already went out) still needs a record for its reason.
          const empty = record(d.choice, []);
          empty.candidates[0].finishReason = reason;
          return [...out, ...push(empty)];
        }
        default:
          return [];
      }
    },
    finish(final: ChatResponse) {
      const out = flushCall();
      if (!held) {
        const empty = record(firstChoice(final).index ?? 0, []);
        empty.candidates[0].finishReason = mapFinishReason(firstChoice(final).finish_reason);
        held = empty;
      }
      const last = (held as GoogleRecord).candidates[0];
      if (last.finishReason === undefined)
        last.finishReason = mapFinishReason(firstChoice(final).finish_reason);
      (held as GoogleRecord).usageMetadata = mapUsage(final);
      return out;
    },
    release() {
      // A record with its finishReason is the terminal event: it waits for the stored capture.
      if (!held || held.candidates[0].finishReason !== undefined) return [];
      const out = [sseFrame(held)];
      held = null;
      return out;
    },
    terminal: () => (held ? [sseFrame(held)] : []),
    error: (status, message) => [encodeGoogleStreamError(status, message)],
  };
}

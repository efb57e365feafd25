import type { ChatLogprob, ChatResponse, ChatUsage } from "../chat/types.ts";
import { upstreamReasoning } from "../codecs/common/upstream-message.ts";

/** Logprobs of the tokens behind one delta, as Chat Completions carries them. */
export type DeltaLogprobs = { content: ChatLogprob[] | null } | null;

/**
 * One step of an answer as it is generated, for one choice. Live streams give many small deltas; a
 * complete answer gives one delta per part with `whole: true` (an encoder may then show the part in
 * its finished form, e.g. normalized tool-call JSON).
 */
export type ChatDelta =
  | { kind: "role"; choice: number }
  | { kind: "reasoning"; choice: number; text: string; logprobs?: DeltaLogprobs; whole?: boolean }
  | { kind: "content"; choice: number; text: string; logprobs?: DeltaLogprobs; whole?: boolean }
  | {
      kind: "tool_call";
      choice: number;
      /** The call's position in the choice's `tool_calls` (the upstream `index`). */
      position: number;
      /** Present on a call's first delta. */
      id?: string;
      name?: string;
      /** The argument text this delta adds ("" when none). */
      arguments: string;
      whole?: boolean;
    }
  | { kind: "finish"; choice: number; reason: string | null };

/** What is known when the upstream's first chunk arrives: its id and, from the prompt ids, the prompt size. */
export interface StreamHead {
  id: string;
  usage: ChatUsage | null;
}

/**
 * A provider's stream, built incrementally. The proxy sends `start` and `delta` frames as the engine
 * samples, then `finish` (everything before the terminal event), stores the capture, and only then
 * sends `terminal`, or `error` instead when the store failed: a harness never sees a complete stream
 * whose capture was lost.
 */
export interface StreamEncoder {
  start(head: StreamHead): string[];
  delta(d: ChatDelta): string[];
  /**
   * Live streams only, after each upstream chunk's deltas: frames an encoder held back to amend
   * (Google's last record must carry finishReason) that can go out now, so the first byte is not
   * a token late. Whatever an encoder still holds at `finish` becomes its terminal event.
   */
  release?(): string[];
  /** `final` is the whole answer (engine fields already stripped). */
  finish(final: ChatResponse): string[];
  terminal(): string[];
  /** The provider's in-stream error event; ends the stream without a terminal event. */
  error(status: number, message: string): string[];
}

function argumentText(args: unknown): string {
  if (typeof args === "string") return args;
  return args === undefined || args === null ? "{}" : JSON.stringify(args);
}

/** A complete upstream answer as deltas, one per part, in the order an engine generates them. */
export function deltasOf(chat: ChatResponse): ChatDelta[] {
  const out: ChatDelta[] = [];
  for (const c of chat.choices ?? []) {
    const choice = c.index;
    out.push({ kind: "role", choice });
    const reasoning = upstreamReasoning(c);
    if (reasoning !== "") out.push({ kind: "reasoning", choice, text: reasoning, whole: true });
    const content = c.message.content;
    if (typeof content === "string" && content !== "") {
      out.push({ kind: "content", choice, text: content, logprobs: c.logprobs ?? null, whole: true });
    }
    const calls = (c.message as { tool_calls?: unknown }).tool_calls;
    if (Array.isArray(calls)) {
      calls.forEach((raw: unknown, position) => {
        const call = (raw && typeof raw === "object" ? raw : {}) as {
          id?: unknown;
          function?: { name?: unknown; arguments?: unknown } | null;
        };
        out.push({
          kind: "tool_call",
          choice,
          position,
          ...(typeof call.id === "string" ? { id: call.id } : {}),
          ...(typeof call.function?.name === "string" ? { name: call.function.name } : {}),
          arguments: argumentText(call.function?.arguments),
          whole: true,
        });
      });
    }
    out.push({ kind: "finish", choice, reason: c.finish_reason ?? null });
  }
  return out;
}

/** The stream for a complete answer: the same encoder the live path uses, fed all at once. */
export function synthesizeStream(encoder: StreamEncoder, chat: ChatResponse): string[] {
  const frames = encoder.start({ id: chat.id, usage: chat.usage ?? null });
  for (const d of deltasOf(chat)) frames.push(...encoder.delta(d));
  frames.push(...encoder.finish(chat), ...encoder.terminal());
  return frames;
}

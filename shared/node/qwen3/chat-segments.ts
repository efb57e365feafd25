/**
 * Cuts a Qwen3 chat token stream (prompt + response) into the parts a reader folds and unfolds:
 * one message per `<|im_start|>`, tool results (`<tool_response>` in a user turn), and inside an
 * assistant turn its `<think>` and `<tool_call>` blocks. Works on token ids, never on text, so a
 * literal `<tool_call>` written in a system prompt is not mistaken for one.
 */

export type SegmentKind = "system" | "user" | "assistant" | "tool_result" | "tool_call" | "think" | "other";

export interface Segment {
  /** Token offsets into the stream, end exclusive. */
  start: number;
  end: number;
  kind: SegmentKind;
  /** The message this segment belongs to (0-based; -1 for text before the first `<|im_start|>`). */
  message: number;
  /** The role written after `<|im_start|>`, or null before the first message. */
  role: string | null;
}

/** The special ids the cut depends on. */
export interface ChatTokenIds {
  imStart: number;
  toolCallOpen: number;
  toolCallClose: number;
  thinkOpen: number;
  thinkClose: number;
  toolResponseOpen: number;
}

/** Ids of the Qwen3 tokenizer the project ships (each tag is one added token). */
export function qwen3ChatTokenIds(q: { imStartId: number; encode(text: string): number[] }): ChatTokenIds {
  const one = (tag: string) => {
    const ids = q.encode(tag);
    if (ids.length !== 1) throw new Error(`${tag} is not a single token in this tokenizer`);
    return ids[0] as number;
  };
  return {
    imStart: q.imStartId,
    toolCallOpen: one("<tool_call>"),
    toolCallClose: one("</tool_call>"),
    thinkOpen: one("<think>"),
    thinkClose: one("</think>"),
    toolResponseOpen: one("<tool_response>"),
  };
}

/** `texts[i]` is token i decoded (see token-texts.ts). */
export function segmentChat(ids: readonly number[], texts: readonly string[], sp: ChatTokenIds): Segment[] {
  const segments: Segment[] = [];
  const starts: number[] = [];
  for (let i = 0; i < ids.length; i++) if (ids[i] === sp.imStart) starts.push(i);
  if (starts[0] !== 0) {
    const end = starts[0] ?? ids.length;
    if (end > 0) segments.push({ start: 0, end, kind: "other", message: -1, role: null });
  }
  starts.forEach((start, m) => {
    const end = starts[m + 1] ?? ids.length;
    const role = roleAt(texts, start + 1, end);
    if (role === "assistant") {
      segments.push(...assistantParts(ids, start, end, m, sp));
      return;
    }
    let kind: SegmentKind = role === "system" ? "system" : role === "user" ? "user" : "other";
    if (role === "user" || role === "tool") {
      for (let i = start; i < end; i++)
        if (ids[i] === sp.toolResponseOpen) {
          kind = "tool_result";
          break;
        }
    }
    segments.push({ start, end, kind, message: m, role });
  });
  return segments;
}

function roleAt(texts: readonly string[], from: number, end: number): string {
  let text = "";
  for (let i = from; i < end && i < from + 8; i++) {
    text += texts[i];
    const nl = text.indexOf("\n");
    if (nl >= 0) return text.slice(0, nl).trim();
  }
  return text.trim();
}

function assistantParts(
  ids: readonly number[],
  start: number,
  end: number,
  message: number,
  sp: ChatTokenIds,
) {
  const parts: Segment[] = [];
  let from = start;
  const push = (to: number, kind: SegmentKind) => {
    if (to > from) parts.push({ start: from, end: to, kind, message, role: "assistant" });
    from = to;
  };
  for (let i = start; i < end; i++) {
    const open =
      ids[i] === sp.toolCallOpen ? sp.toolCallClose : ids[i] === sp.thinkOpen ? sp.thinkClose : null;
    if (open === null) continue;
    push(i, "assistant");
    let j = i + 1;
    while (j < end && ids[j] !== open) j++;
    const close = Math.min(j + 1, end);
    push(close, ids[i] === sp.toolCallOpen ? "tool_call" : "think");
    i = close - 1;
  }
  push(end, "assistant");
  return parts;
}

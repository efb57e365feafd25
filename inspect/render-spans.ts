import type { ChatTokenIds } from "../shared/node/qwen3/chat-segments.ts";
import { segmentChat } from "../shared/node/qwen3/chat-segments.ts";
import { tokenTexts } from "../shared/node/qwen3/token-texts.ts";

export interface SpanStyle {
  /** Wraps a trainable (mask 1) span. */
  trainable(text: string): string;
  /** Wraps context (prompt and mask-0 tokens). */
  context(text: string): string;
  /** A line the reader is told rather than the tokens (a folded system prompt). */
  note(text: string): string;
  legend: string;
}

/** ANSI colors for a terminal: trainable green, context dim. */
export const ANSI_STYLE: SpanStyle = {
  trainable: (t) => `\x1b[32m${t}\x1b[0m`,
  context: (t) => `\x1b[2m${t}\x1b[0m`,
  note: (t) => `\x1b[36m${t}\x1b[0m`,
  legend:
    "legend: \x1b[32mgreen\x1b[0m = trainable (mask 1: sampled by the policy), \x1b[2mdim\x1b[0m = context (prompt and inserted tokens, mask 0), \x1b[36mcyan\x1b[0m = a note from polar inspect",
};

const OPEN = "⟦";
const CLOSE = "⟧";
/** A literal marker character in the text is printed as its escape, so a marker is always ours. */
const escapeMarkers = (t: string) => t.replaceAll(OPEN, "\\u27e6").replaceAll(CLOSE, "\\u27e7");

/**
 * Plain text for pipes and files: trainable spans between ⟦ and ⟧. Those two characters in the
 * decoded text itself are printed as `\u27e6` / `\u27e7`, so the markers cannot collide with text
 * (a prompt that writes `[[...]]` or even `⟦...⟧` shows as written or escaped, never as a span).
 */
export const MARKER_STYLE: SpanStyle = {
  trainable: (t) => `${OPEN}${escapeMarkers(t)}${CLOSE}`,
  context: (t) => escapeMarkers(t),
  note: (t) => `«${t}»`,
  legend:
    "legend: ⟦...⟧ = trainable (mask 1: sampled by the policy); unmarked = context (prompt and inserted tokens, mask 0); «...» = a note from polar inspect; a literal ⟦ or ⟧ in the text is printed as \\u27e6 or \\u27e7",
};

/** The token arrays of a trace (a shard row, or a capture's prompt and response). */
export interface TokenTrace {
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: number[];
}

export interface RenderOptions {
  tokenBytes: (id: number) => Uint8Array;
  chatIds: ChatTokenIds;
  /** Print the system prompt instead of folding it into one note line. */
  showSystem?: boolean;
  /** Shared across traces: see token-texts.ts. */
  standalone?: Map<number, string | null>;
}

/**
 * The trace as text: prompt then response, each token's own text (a character split across
 * tokens belongs to the token that completes it), cut into runs of equal mask. The system
 * prompt, repeated by every trace of a session, is folded into a note unless asked for.
 */
export function renderTrace(trace: TokenTrace, style: SpanStyle, opts: RenderOptions): string {
  const ids = [...trace.prompt_ids, ...trace.response_ids];
  const texts = tokenTexts(ids, opts.tokenBytes, opts.standalone);
  const promptLen = trace.prompt_ids.length;
  const trainable = (i: number) => i >= promptLen && trace.loss_mask[i - promptLen] === 1;
  const folds = new Map<number, number>();
  if (!opts.showSystem) {
    for (const seg of segmentChat(ids, texts, opts.chatIds))
      if (seg.kind === "system" && seg.end <= promptLen) folds.set(seg.start, seg.end);
  }
  const parts: string[] = [];
  let i = 0;
  while (i < ids.length) {
    const foldEnd = folds.get(i);
    if (foldEnd !== undefined) {
      const trailing = texts[foldEnd - 1]?.endsWith("\n") ? "\n" : "";
      parts.push(style.note(`system prompt: ${foldEnd - i} tokens, folded (--system prints it)`) + trailing);
      i = foldEnd;
      continue;
    }
    let j = i + 1;
    while (j < ids.length && trainable(j) === trainable(i) && !folds.has(j)) j++;
    const text = texts.slice(i, j).join("");
    parts.push(trainable(i) ? style.trainable(text) : style.context(text));
    i = j;
  }
  return parts.join("");
}

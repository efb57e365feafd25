import type { ShardRow } from "../shards/shard-rows.ts";

export interface SpanStyle {
  /** Wraps a trainable (mask 1) span. */
  trainable(text: string): string;
  /** Wraps context (prompt and mask-0 tokens). */
  context(text: string): string;
}

/** ANSI colors for a terminal: trainable green, context dim. */
export const ANSI_STYLE: SpanStyle = {
  trainable: (t) => `\x1b[32m${t}\x1b[0m`,
  context: (t) => `\x1b[2m${t}\x1b[0m`,
};

/** Plain text for pipes and files: trainable spans between `[[` and `]]`. */
export const MARKER_STYLE: SpanStyle = {
  trainable: (t) => `[[${t}]]`,
  context: (t) => t,
};

/**
 * The trace as text: the prompt, then the response cut into runs of equal mask, each run
 * decoded on its own (a character whose bytes straddle a run boundary shows as U+FFFD).
 */
export function renderTrace(row: ShardRow, decode: (ids: number[]) => string, style: SpanStyle): string {
  const parts = [style.context(decode(row.prompt_ids))];
  let start = 0;
  for (let i = 1; i <= row.response_ids.length; i++) {
    if (i === row.response_ids.length || row.loss_mask[i] !== row.loss_mask[start]) {
      const text = decode(row.response_ids.slice(start, i));
      parts.push(row.loss_mask[start] === 1 ? style.trainable(text) : style.context(text));
      start = i;
    }
  }
  return parts.join("");
}

import { compareIds } from "../../shared/ids.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";

/** A capture that can be trained on: it succeeded, the engine reported real token ids, and a live stream's ids are whole. */
export interface Turn {
  capture: CaptureRecord;
  prompt: readonly number[];
  response: readonly number[];
  /** null when missing, or when its length does not match the response (then no token has a trustworthy one). */
  logprobs: readonly number[] | null;
}

export interface UsableCaptures {
  turns: Turn[];
  excludedFailed: number;
  excludedNoTokenIds: number;
  /** Live streams whose ids did not add up (`ids_incomplete`) or that the client left (`aborted`). */
  excludedStreamIncomplete: number;
  /** The successful captures without token ids, by capture_id: samples no trace can hold. */
  gaps: CaptureRecord[];
}

/**
 * Drops failed calls and calls without real token ids (never re-tokenize to invent them),
 * and orders the rest by capture_id: ULIDs sort in call order, and sorting makes the output
 * independent of the order a store listed the captures in.
 */
export function usableCaptures(captures: readonly CaptureRecord[]): UsableCaptures {
  const sorted = [...captures].sort((a, b) => compareIds(a.capture_id, b.capture_id));
  const turns: Turn[] = [];
  let excludedFailed = 0;
  let excludedNoTokenIds = 0;
  let excludedStreamIncomplete = 0;
  const gaps: CaptureRecord[] = [];
  for (const capture of sorted) {
    if (capture.error !== null) {
      excludedFailed++;
      continue;
    }
    if ((capture.stream_status ?? "complete") !== "complete") {
      excludedStreamIncomplete++;
      continue;
    }
    const prompt = capture.prompt_token_ids;
    const response = capture.response_token_ids;
    if (prompt === null || response === null) {
      excludedNoTokenIds++;
      gaps.push(capture);
      continue;
    }
    const lp = capture.response_logprobs;
    const logprobs = lp !== null && lp.length === response.length ? lp : null;
    turns.push({ capture, prompt, response, logprobs });
  }
  return { turns, excludedFailed, excludedNoTokenIds, excludedStreamIncomplete, gaps };
}

import type { BreakReason } from "../../shared/schemas/trajectory.ts";
import { type PrefixMarks, prefixHashes, prefixMarks } from "./token-hash.ts";
import type { Turn } from "./usable-captures.ts";

/** One chain of turns as a builder found it, before it becomes a trace. */
export interface BuiltChain {
  turns: Turn[];
  /** Why the chain started; null for the session's first chain. */
  brk: ChainBreak | null;
  orphanReason: string | null;
  /** Id-less captures that fall inside this chain. */
  gaps: number;
}

export interface ChainBreak {
  reason: BreakReason;
  parent: BuiltChain;
  /** First position (in the parent's prompt + response) where this chain's first prompt differs. */
  position: number;
  /** This chain's first prompt around `position`. */
  context: number[];
  /** A sub-agent's spawning tool call in `parent` (spawned-by.ts). */
  toolCallId?: string;
}

/** What prefix merging learned about each turn's prompt, reused to explain breaks. */
export interface PromptIndex {
  marks: Map<Turn, PrefixMarks>;
  /** Turns by prompt length and hash: calls that sent the very same prompt. */
  byPrompt: Map<string, Turn[]>;
  keyOf: Map<Turn, string>;
}

/** Tokens on each side of a break position kept in `break_context_ids`. */
const CONTEXT = 8;

export function breakContext(prompt: readonly number[], position: number): number[] {
  return prompt.slice(Math.max(0, position - CONTEXT), Math.min(prompt.length, position + CONTEXT));
}

/** An earlier call (by capture_id) that sent exactly `turn`'s prompt, if any: the latest such. */
export function earlierSamePrompt(index: PromptIndex, turn: Turn): Turn | null {
  const same = index.byPrompt.get(index.keyOf.get(turn) ?? "") ?? [];
  let found: Turn | null = null;
  for (const other of same) {
    if (other === turn || other.capture.capture_id >= turn.capture.capture_id) continue;
    if (!sameIds(other.prompt, turn.prompt)) continue;
    if (found === null || other.capture.capture_id > found.capture.capture_id) found = other;
  }
  return found;
}

/** Whether a later call (by capture_id) sent exactly `turn`'s prompt. */
export function repeatedLater(index: PromptIndex, turn: Turn): boolean {
  const same = index.byPrompt.get(index.keyOf.get(turn) ?? "") ?? [];
  return same.some(
    (other) =>
      other !== turn &&
      other.capture.capture_id > turn.capture.capture_id &&
      sameIds(other.prompt, turn.prompt),
  );
}

export function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A `PromptIndex` over turns no merge has hashed yet (the per_request builder). */
export function indexPrompts(turns: readonly Turn[]): PromptIndex {
  const index: PromptIndex = { marks: new Map(), byPrompt: new Map(), keyOf: new Map() };
  for (const turn of turns) addToIndex(index, turn, prefixHashes(turn.prompt));
  return index;
}

/** Records a turn's prompt, given its full prefix hashes. */
export function addToIndex(index: PromptIndex, turn: Turn, hashes: { h1: Int32Array; h2: Int32Array }): void {
  const n = turn.prompt.length;
  const key = `${n}:${hashes.h1[n]}:${hashes.h2[n]}`;
  index.marks.set(turn, prefixMarks(hashes.h1, hashes.h2));
  index.keyOf.set(turn, key);
  const same = index.byPrompt.get(key);
  if (same) same.push(turn);
  else index.byPrompt.set(key, [turn]);
}

import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { BuildOutput, TrajectoryBuilder } from "./builder.ts";
import { chainToTrace } from "./chain-trace.ts";
import { endOfTurnIds } from "./end-of-turn.ts";
import { extendHash, type PrefixHash, prefixHashes } from "./token-hash.ts";
import { type Turn, usableCaptures } from "./usable-captures.ts";

/** One chain of turns, each prompt extending the previous prompt + response token for token. */
interface Chain {
  turns: Turn[];
  /** Length and hash of the last turn's prompt + response: what the next prompt must start with. */
  tipLength: number;
  tipHash: PrefixHash;
  /** Length and hash of the first half of the last turn's prompt, to tell a rewritten history from an unrelated prompt. */
  halfPromptLength: number;
  halfPromptHash: PrefixHash;
}

/**
 * Merges turns into chains by strict token-prefix relation. A turn joins the chain whose tip
 * (last prompt + last response) is a prefix of its prompt, the longest such tip winning
 * (ties: the older chain); otherwise it starts a new chain (a sub-agent, a compaction, or a
 * rewritten history). Comparing against prompt + response, not a re-rendered text, makes the
 * end-of-turn token work out either way: a response that ends with `<|im_end|>` is followed by
 * a prompt that repeats it, and one that does not (stripped stop token, length cut) is followed
 * by a prompt whose first interstitial token is the template's `<|im_end|>`.
 *
 * Cost: one hash pass over each prompt and response, plus one exact compare of the winning tip,
 * so linear in captured tokens; checking the open chains is O(chains) per turn.
 */
export function prefixMergingBuilder(config: Record<string, unknown>): TrajectoryBuilder {
  return {
    strategy: "prefix_merging",
    build(captures: readonly CaptureRecord[]): BuildOutput {
      const { turns, excludedFailed, excludedNoTokenIds } = usableCaptures(captures);
      const eot = endOfTurnIds(config, turns);
      const chains: Chain[] = [];
      let breaks = 0;
      for (const turn of turns) {
        const { h1, h2 } = prefixHashes(turn.prompt);
        const n = turn.prompt.length;
        const hashAt = (len: number): PrefixHash => ({ h1: h1[len], h2: h2[len] });
        const chain = longestMatchingTip(chains, turn.prompt, h1, h2);
        const tipHash = extendHash(hashAt(n), turn.response);
        const tipLength = n + turn.response.length;
        const half = Math.ceil(n / 2);
        if (chain) {
          chain.turns.push(turn);
          chain.tipLength = tipLength;
          chain.tipHash = tipHash;
          chain.halfPromptLength = half;
          chain.halfPromptHash = hashAt(half);
          continue;
        }
        if (chains.some((c) => sharesHalfOfLastPrompt(c, turn.prompt, h1, h2))) breaks++;
        chains.push({
          turns: [turn],
          tipLength,
          tipHash,
          halfPromptLength: half,
          halfPromptHash: hashAt(half),
        });
      }
      const traces = chains.map((c) => chainToTrace(c.turns, eot));
      let trainable = 0;
      let context = 0;
      for (const t of traces) {
        for (const m of t.loss_mask) trainable += m;
        context += t.prompt_ids.length + t.loss_mask.length;
      }
      context -= trainable;
      return {
        traces,
        stats: {
          captures: captures.length,
          excluded_no_token_ids: excludedNoTokenIds,
          excluded_failed: excludedFailed,
          chains: chains.length,
          prefix_breaks: breaks,
          trainable_tokens: trainable,
          context_tokens: context,
        },
      };
    },
  };
}

function longestMatchingTip(
  chains: readonly Chain[],
  prompt: readonly number[],
  h1: Int32Array,
  h2: Int32Array,
): Chain | null {
  // Candidates by hash, longest first (stable sort keeps older chains first among equals);
  // the exact compare guards against a hash collision.
  const candidates = chains.filter(
    (c) =>
      c.tipLength <= prompt.length && h1[c.tipLength] === c.tipHash.h1 && h2[c.tipLength] === c.tipHash.h2,
  );
  candidates.sort((a, b) => b.tipLength - a.tipLength);
  for (const c of candidates) {
    const last = c.turns[c.turns.length - 1];
    if (startsWith(prompt, last.prompt, 0) && startsWith(prompt, last.response, last.prompt.length)) return c;
  }
  return null;
}

/**
 * A new chain counts as a prefix break when its prompt starts with at least the first half of an
 * open chain's last prompt: the conversation went on but its history was re-rendered differently
 * (earlier reasoning stripped, the generation prompt's empty think block dropped, a tool call
 * re-serialized), or the call was retried. A sub-agent or a compaction shares at most the system
 * prompt, usually less than half. A heuristic for the statistic only; chains never depend on it.
 */
function sharesHalfOfLastPrompt(
  c: Chain,
  prompt: readonly number[],
  h1: Int32Array,
  h2: Int32Array,
): boolean {
  const len = c.halfPromptLength;
  if (len === 0 || len > prompt.length || h1[len] !== c.halfPromptHash.h1 || h2[len] !== c.halfPromptHash.h2)
    return false;
  const last = c.turns[c.turns.length - 1].prompt;
  for (let i = 0; i < len; i++) if (prompt[i] !== last[i]) return false;
  return true;
}

/** Whether `whole[offset..offset + part.length)` equals `part`. */
function startsWith(whole: readonly number[], part: readonly number[], offset: number): boolean {
  if (offset + part.length > whole.length) return false;
  for (let i = 0; i < part.length; i++) if (whole[offset + i] !== part[i]) return false;
  return true;
}

/**
 * Deterministic stand-in logprobs in vLLM's `choices[].logprobs.content[]` shape. A value
 * depends only on the token id and its position in the response, so fixtures are stable and a
 * test can recompute it; values lie in [-2.999, -0.001], i.e. inside (-3, -0.001].
 */

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

export function dryRunLogprob(tokenId: number, position: number): number {
  // Knuth's multiplicative hash spreads neighbouring ids/positions over the range.
  const h = (Math.imul(tokenId + 1, 2654435761) ^ Math.imul(position + 1, 40503)) >>> 0;
  return -(1 + (h % 2999)) / 1000;
}

export interface LogprobTokenizer {
  tokenText(id: number): string;
  vocabSize: number;
}

export interface LogprobOptions {
  /** Number of alternatives per position (`top_logprobs`); the sampled token comes first. */
  topLogprobs: number;
  /** vLLM's `return_tokens_as_token_ids`: `token` reads `token_id:N`. */
  tokensAsIds: boolean;
}

/** Alternatives after the sampled token: other ids, each less likely than the one before. */
function alternativeId(tokenId: number, k: number, vocabSize: number): number {
  return (tokenId + k * 7919) % vocabSize;
}

export function tokenLogprobs(
  ids: readonly number[],
  firstPosition: number,
  tok: LogprobTokenizer,
  options: LogprobOptions,
): TokenLogprob[] {
  const utf8 = new TextEncoder();
  const entry = (id: number, logprob: number) => {
    const token = options.tokensAsIds ? `token_id:${id}` : tok.tokenText(id);
    return { token, logprob, bytes: [...utf8.encode(options.tokensAsIds ? tok.tokenText(id) : token)] };
  };
  return ids.map((id, i) => {
    const logprob = dryRunLogprob(id, firstPosition + i);
    const top = [];
    for (let k = 0; k < options.topLogprobs; k++) {
      top.push(k === 0 ? entry(id, logprob) : entry(alternativeId(id, k, tok.vocabSize), logprob - k));
    }
    return { ...entry(id, logprob), top_logprobs: top };
  });
}

/**
 * A model of an engine's automatic prefix cache (vLLM's block hashing, SGLang's radix cache at
 * page granularity): the KV of every full block of `BLOCK_TOKENS` ids is kept under a hash that
 * chains its parent's, so a block is found only when everything before it matched. Capacity is
 * in tokens; the least recently used blocks go first. A request's cached tokens are its leading
 * full blocks found in the cache, never the whole prompt (the last token is always computed,
 * as in vLLM). After a request, the blocks of its prompt and sampled ids are kept (vLLM caches
 * blocks filled during decode too).
 */

export const BLOCK_TOKENS = 16;

export interface PrefixCacheStats {
  capacityTokens: number;
  usedTokens: number;
  lookups: number;
  promptTokens: number;
  cachedTokens: number;
}

export class PrefixCache {
  private readonly capacityBlocks: number;
  private readonly blockTokens: number;
  /** Block hash -> present; Map order is recency (oldest first). */
  private readonly blocks = new Map<number, true>();
  private lookups = 0;
  private promptTokens = 0;
  private cachedTokens = 0;

  constructor(capacityTokens: number, blockTokens = BLOCK_TOKENS) {
    if (!(capacityTokens >= 0)) throw new Error(`prefix cache capacity must be >= 0, got ${capacityTokens}`);
    this.blockTokens = blockTokens;
    this.capacityBlocks = Math.floor(capacityTokens / blockTokens);
  }

  /** Tokens of `promptIds` already cached; touches the matched blocks. */
  lookup(promptIds: readonly number[]): number {
    const hashes = blockHashes(
      promptIds,
      this.blockTokens,
      Math.floor((promptIds.length - 1) / this.blockTokens),
    );
    let hit = 0;
    for (const h of hashes) {
      if (!this.blocks.has(h)) break;
      this.touch(h);
      hit++;
    }
    const cached = hit * this.blockTokens;
    this.lookups++;
    this.promptTokens += promptIds.length;
    this.cachedTokens += cached;
    return cached;
  }

  /** Keeps every full block of `ids` (prompt then sampled ids), evicting the least recently used. */
  insert(ids: readonly number[]): void {
    if (this.capacityBlocks === 0) return;
    for (const h of blockHashes(ids, this.blockTokens, Math.floor(ids.length / this.blockTokens))) {
      this.touch(h);
      while (this.blocks.size > this.capacityBlocks) {
        const oldest = this.blocks.keys().next().value as number;
        this.blocks.delete(oldest);
      }
    }
  }

  clear(): void {
    this.blocks.clear();
    this.lookups = 0;
    this.promptTokens = 0;
    this.cachedTokens = 0;
  }

  stats(): PrefixCacheStats {
    return {
      capacityTokens: this.capacityBlocks * this.blockTokens,
      usedTokens: this.blocks.size * this.blockTokens,
      lookups: this.lookups,
      promptTokens: this.promptTokens,
      cachedTokens: this.cachedTokens,
    };
  }

  private touch(h: number): void {
    this.blocks.delete(h);
    this.blocks.set(h, true);
  }
}

/**
 * Chained hashes of the first `count` full blocks: two 32-bit FNV-style lanes folded into a
 * 53-bit number, so collisions among millions of blocks stay negligible without BigInt.
 */
function blockHashes(ids: readonly number[], blockTokens: number, count: number): number[] {
  const out: number[] = [];
  let a = 0x811c9dc5;
  let b = 0x9e3779b9;
  for (let k = 0; k < count; k++) {
    for (let i = k * blockTokens; i < (k + 1) * blockTokens; i++) {
      const id = ids[i];
      a = Math.imul(a ^ id, 0x01000193);
      b = Math.imul(b ^ id, 0x5bd1e995);
      b ^= b >>> 15;
    }
    out.push((a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff));
  }
  return out;
}

/**
 * Prefill as one queue per server: a request's uncached tokens take `uncached / tokensPerSecond`
 * seconds after the prefill work already queued, so replicas that miss the cache fall behind.
 */
export class PrefillClock {
  private busyUntil = 0;
  private readonly tokensPerSecond: number;

  constructor(tokensPerSecond: number) {
    this.tokensPerSecond = tokensPerSecond;
  }

  /** Milliseconds this request waits for its prefill (0 when the cost model is off). */
  schedule(uncachedTokens: number, now: number): number {
    if (!(this.tokensPerSecond > 0)) return 0;
    const start = Math.max(now, this.busyUntil);
    this.busyUntil = start + (uncachedTokens / this.tokensPerSecond) * 1000;
    return this.busyUntil - now;
  }

  reset(): void {
    this.busyUntil = 0;
  }
}

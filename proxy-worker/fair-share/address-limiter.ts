/**
 * Per-address limit on requests that carry no valid credential (docs/security.md, "Fair share at
 * the proxy"): a token bucket of `perMinute` requests per address, refilled continuously. Counted
 * in this process (one isolate on Workers).
 */

const MINUTE_MS = 60_000;
/** Addresses tracked before full buckets are forgotten: a scan of many addresses stays bounded. */
const SWEEP_FLOOR = 4096;

interface Bucket {
  tokens: number;
  refilledAt: number;
}

export class AddressLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweepAt = SWEEP_FLOOR;
  readonly perMinute: number;
  private readonly clock: () => number;

  constructor(perMinute: number, clock: () => number) {
    this.perMinute = perMinute;
    this.clock = clock;
    if (!(perMinute >= 1)) throw new Error(`the per-address limit must be >= 1 a minute, got ${perMinute}`);
  }

  /** Milliseconds until this address may send another uncredentialed request; 0: now. */
  waitMs(address: string): number {
    const bucket = this.refilled(addressKey(address));
    if (!bucket || bucket.tokens >= 1) return 0;
    return Math.ceil(((1 - bucket.tokens) * MINUTE_MS) / this.perMinute);
  }

  /**
   * One uncredentialed request from this address. The bucket stops at zero: requests answered
   * together all passed `waitMs` before any was charged, and a debt of thousands would lock the
   * address out (its new sessions included) for many minutes; at zero it is free again within
   * one request's share of a minute.
   */
  charge(address: string): void {
    const key = addressKey(address);
    let bucket = this.refilled(key);
    if (!bucket) {
      if (this.buckets.size >= this.sweepAt) this.sweep();
      bucket = { tokens: this.perMinute, refilledAt: this.clock() };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.max(0, bucket.tokens - 1);
  }

  private refilled(key: string): Bucket | undefined {
    const bucket = this.buckets.get(key);
    if (!bucket) return undefined;
    const now = this.clock();
    bucket.tokens = Math.min(
      this.perMinute,
      bucket.tokens + ((now - bucket.refilledAt) * this.perMinute) / MINUTE_MS,
    );
    bucket.refilledAt = now;
    return bucket;
  }

  private sweep(): void {
    for (const key of [...this.buckets.keys()]) {
      const b = this.refilled(key);
      if (b && b.tokens >= this.perMinute) this.buckets.delete(key);
    }
    this.sweepAt = Math.max(SWEEP_FLOOR, this.buckets.size * 2);
  }
}

/**
 * What one client is: an IPv4 address, or an IPv6 /64 (one host is commonly given a whole /64, so
 * counting single v6 addresses would let it rotate past the limit). IPv4-mapped v6 is IPv4.
 */
export function addressKey(address: string): string {
  const a = address.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1];
  if (!a.includes(":")) return a;
  const bare = a.replace(/%.*$/, "");
  const [head, tail = ""] = bare.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = bare.includes("::") ? (tail === "" ? [] : tail.split(":")) : [];
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array(Math.max(0, missing)).fill("0"), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

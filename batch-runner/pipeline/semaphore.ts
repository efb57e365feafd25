/** A FIFO counting semaphore; waiting can be abandoned with an AbortSignal. */
export class Semaphore {
  private permits: number;
  private readonly waiting: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];

  constructor(permits: number) {
    this.permits = permits;
  }

  get available(): number {
    return this.permits;
  }

  get waiters(): number {
    return this.waiting.length;
  }

  tryAcquire(): boolean {
    if (this.permits > 0 && this.waiting.length === 0) {
      this.permits--;
      return true;
    }
    return false;
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const entry = {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next.resolve();
    else this.permits++;
  }
}

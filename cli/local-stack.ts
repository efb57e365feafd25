import { MemoryQueue } from "../batch-runner/queue/memory-queue.ts";

/*
 * The pieces `polar run` (embedded.ts) and `polar serve` (local-control.ts) both assemble in one
 * process: an in-memory session queue with its dead-letter queue, and an upstream (the dry-run
 * policy when none is given).
 */

/** The session queue a local runner consumes; a job received `maxReceives` times is dead-lettered. */
export function localQueue(maxReceives: number): MemoryQueue {
  const deadLetter = new MemoryQueue({ url: "memory://dead-letter" });
  return new MemoryQueue({ url: "memory://sessions", maxReceiveCount: maxReceives, deadLetter });
}

/** The given inference server, or a dry-run policy started on 127.0.0.1 (closed by `closers`). */
export async function upstreamOrPolicy(
  upstream: string | undefined,
  closers: Array<() => Promise<void>>,
  log: (line: string) => void,
): Promise<string> {
  if (upstream) return upstream;
  const { startPolicyServer } = await import("../dry-run-policy/server.ts");
  const policy = await startPolicyServer({ host: "127.0.0.1", port: 0 });
  closers.unshift(() => policy.close());
  log(`dry-run policy at ${policy.url}`);
  return policy.url;
}

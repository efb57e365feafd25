import { MemoryQueue } from "../batch-runner/queue/memory-queue.ts";
import type { NodeProxyOptions, RunningProxy } from "../proxy-worker/node.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";

/*
 * The pieces `polar run` (embedded.ts) and `polar serve` (local-control.ts) both assemble in one
 * process: an in-memory session queue with its dead-letter queue, an upstream (the dry-run
 * policy when none is given), and the proxy in front of it.
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

/**
 * The proxy the local runner's sessions call: session tokens signed with `signingKey`, log lines
 * tagged `[proxy]`, closed by `closers`. `more` adds the caller's own options (address, control API).
 */
export async function startLocalProxy(
  base: { upstream: string; engine: NodeProxyOptions["engine"]; store: ObjectStore; signingKey: string },
  closers: Array<() => Promise<void>>,
  log: (line: string) => void,
  more: Partial<NodeProxyOptions> = {},
): Promise<RunningProxy> {
  const { startNodeProxy } = await import("../proxy-worker/node.ts");
  const proxy = await startNodeProxy({
    upstreamUrl: base.upstream,
    engine: base.engine,
    store: base.store,
    auth: "token",
    signingKey: base.signingKey,
    host: "127.0.0.1",
    port: 0,
    log: (m) => log(`[proxy] ${m}`),
    ...more,
  });
  closers.unshift(() => proxy.close());
  return proxy;
}

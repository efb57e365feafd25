/**
 * Active health checks (Node): every interval, `GET /health` on each replica (vLLM and SGLang
 * both serve it). A drained replica that answers comes back before its drain ends; one that does
 * not is drained. The Worker has no timers between requests and relies on passive checks only.
 * The same probe vets a replica the control API is asked to register.
 */
import { type Upstream, upstreamRoot } from "../upstream.ts";
import type { ReplicaSet } from "./replicas.ts";

export const DEFAULT_PROBE_INTERVAL_MS = 5_000;
/** A busy engine answers /health late; only a replica that cannot answer at all is drained. */
const PROBE_TIMEOUT_MS = 5_000;

export type ProbeResult = { ok: true } | { ok: false; why: string };

/** One `GET /health`: ok on a 2xx; otherwise why not (the status, or the transport's error). */
export async function probeOnce(up: Upstream, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const url = `${upstreamRoot(up.baseUrl)}/health`;
  try {
    const res = await up.fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer().catch(() => undefined);
    return res.ok ? { ok: true } : { ok: false, why: `GET ${url} answered ${res.status}` };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const detail =
      e.name === "TimeoutError"
        ? `no answer within ${timeoutMs} ms`
        : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { ok: false, why: `GET ${url} failed: ${detail}` };
  }
}

export function startProbes(set: ReplicaSet, intervalMs = DEFAULT_PROBE_INTERVAL_MS): () => void {
  let running = false;
  const round = async () => {
    if (running) return;
    running = true;
    try {
      // The set as it is now: replicas registered or removed at runtime are probed from the next round.
      await Promise.all(
        [...set.replicas].map(async (replica) => {
          const result = await probeOnce(replica.upstream);
          if (result.ok) set.markHealthy(replica);
          else set.markFailed(replica);
        }),
      );
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void round(), intervalMs);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

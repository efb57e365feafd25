/**
 * Active health checks (Node): every interval, one probe of each replica. A drained replica that
 * answers comes back before its drain ends; one that does not is drained. The Worker has no timers
 * between requests and relies on passive checks only. The same probe vets a replica the control
 * API is asked to register.
 *
 * The probe is `GET /health` (vLLM and SGLang both serve it). A server with no such route (404) is
 * asked `POST /tokenize` with a one-word prompt instead, and passes only with a 2xx JSON answer
 * holding token ids: NeMo RL's vLLM server (`vllm_worker_async.py`) serves `/v1/chat/completions`
 * and `/tokenize` and nothing else, and an address that is no engine answers neither. Any other
 * answer to `/health` (a 503 while loading, a refused port, a redirect) fails.
 */
import { z } from "zod";
import { type Upstream, upstreamRoot } from "../upstream.ts";
import { ADDRESS_REFUSED_CODE } from "./replica-address.ts";
import type { ReplicaSet } from "./replicas.ts";

export const DEFAULT_PROBE_INTERVAL_MS = 5_000;
/** A busy engine answers late; only a replica that cannot answer at all is drained. Both asks share it. */
const PROBE_TIMEOUT_MS = 5_000;
/** A tokenize answer to a one-word prompt is tens of bytes; more than this is no such answer. */
const MAX_TOKENIZE_ANSWER_BYTES = 64 * 1024;
const TOKENIZE_PROBE_BODY = JSON.stringify({ prompt: "ok" });
/** What vLLM's `/tokenize` answers (`count`, `max_model_len` and `token_strs` beside it). */
const TokenizeAnswer = z.looseObject({ tokens: z.array(z.number().int().nonnegative()).min(1) });

export type ProbeResult = { ok: true } | { ok: false; why: string };

/** One health check: ok on a 2xx `GET /health`, or (that route absent) on a tokenize answer. */
export async function probeOnce(up: Upstream, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const root = upstreamRoot(up.baseUrl);
  const signal = AbortSignal.timeout(timeoutMs);
  const health = `${root}/health`;
  let status: number;
  try {
    // A redirect fails the probe: the address was vetted, not wherever it points.
    const res = await up.fetch(health, { signal, redirect: "manual" });
    await res.arrayBuffer().catch(() => undefined);
    if (res.ok) return { ok: true };
    status = res.status;
  } catch (err) {
    return { ok: false, why: `GET ${health} failed: ${transportError(err, timeoutMs)}` };
  }
  const noHealth = `GET ${health} answered ${status}`;
  if (status !== 404) return { ok: false, why: noHealth };
  const tokenize = `${root}/tokenize`;
  try {
    // A redirect is an answer, not a second POST to wherever it points (the address was vetted, not its target).
    const res = await up.fetch(tokenize, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: TOKENIZE_PROBE_BODY,
      redirect: "manual",
      signal,
    });
    const text = await boundedText(res, MAX_TOKENIZE_ANSWER_BYTES);
    if (!res.ok) return { ok: false, why: `${noHealth}; POST ${tokenize} answered ${res.status}` };
    if (text === null || !TokenizeAnswer.safeParse(parseJson(text)).success)
      return { ok: false, why: `${noHealth}; POST ${tokenize} answered ${res.status} without token ids` };
    return { ok: true };
  } catch (err) {
    return { ok: false, why: `${noHealth}; POST ${tokenize} failed: ${transportError(err, timeoutMs)}` };
  }
}

function transportError(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  // The guard's refusal says which name resolved where; other causes' codes say enough.
  if (e.cause?.code === ADDRESS_REFUSED_CODE && e.cause.message) return e.cause.message;
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

/** The body as text, or null once it passes `limit` bytes (the rest is not read). */
async function boundedText(res: Response, limit: number): Promise<string | null> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
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

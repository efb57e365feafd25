import type { ProxyDeps } from "../../proxy-worker/deps.ts";
import { startNodeProxy } from "../../proxy-worker/node.ts";
import { decodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";

export interface StartProxyOptions extends Omit<ProxyDeps, "upstream" | "store" | "auth"> {
  /** Upstream root URL (e.g. the dry-run policy's `url`). */
  upstream: string;
  /** Default: a fresh MemoryStore. */
  store?: ObjectStore;
  /** `"off"` accepts any key; `{signingKey}` verifies session tokens. Default: tokens if `signingKey` is given, else off. */
  auth?: "off" | { signingKey: string };
  upstreamTimeoutMs?: number;
}

export interface TestProxy {
  /** e.g. `http://127.0.0.1:41234`: SDK base URLs append their own `/v1` (see docs/proxy.md). */
  url: string;
  store: ObjectStore;
  close(): Promise<void>;
}

/** The real Node proxy on 127.0.0.1 with an ephemeral port, for tests. Call `close()` in afterAll. */
export async function startProxy(opts: StartProxyOptions): Promise<TestProxy> {
  const { upstream, store = new MemoryStore(), signingKey, ...rest } = opts;
  const auth = opts.auth ?? (signingKey ? { signingKey } : "off");
  const running = await startNodeProxy({
    ...rest,
    upstreamUrl: upstream,
    store,
    host: "127.0.0.1",
    port: 0,
    ...(auth === "off" ? { auth: "off" as const } : { auth: "token" as const, signingKey: auth.signingKey }),
  });
  return { url: running.url, store, close: () => running.close() };
}

/** Every capture of one session, decoded, in call order (capture ids are ULIDs). */
export async function readCaptures(
  store: ObjectStore,
  taskId: string,
  sessionId: string,
): Promise<CaptureRecord[]> {
  const out: CaptureRecord[] = [];
  for (const key of await store.list(keys.capturesOfSession(taskId, sessionId))) {
    const bytes = await store.get(key);
    if (bytes) out.push(await decodeCapture(bytes));
  }
  return out;
}

let sessionCalls = 0;

/**
 * One Chat Completions call in a session of its own (task and session ids `<prefix>-task-N`,
 * `<prefix>-session-N`, a token signed with `signingKey`), and that session's capture when the
 * call answered 200: how the routing tests see which replica a call went to and how it was stamped.
 */
export async function oneSessionCall(
  proxyUrl: string,
  store: ObjectStore,
  signingKey: string,
  prefix: string,
): Promise<{ status: number; text: string; capture: CaptureRecord | null }> {
  const n = sessionCalls++;
  const [taskId, sessionId] = [`${prefix}-task-${n}`, `${prefix}-session-${n}`];
  const token = await mintSessionToken({ sessionId, taskId, ttlSeconds: 600 }, signingKey);
  const res = await fetch(`${proxyUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: `hello ${n}` }] }),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, text, capture: null };
  const [capture] = await readCaptures(store, taskId, sessionId);
  return { status: res.status, text, capture: capture ?? null };
}

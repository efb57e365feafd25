/**
 * Finds the capture a token-in-token-out call extends: the session's latest capture whose
 * conversation (its upstream messages plus the assistant message the proxy answered with) is a
 * prefix of the incoming messages. Node keeps each session's last capture in an LRU; the store
 * is the authority (a Worker's next call may land in another isolate), so a miss lists it.
 */
import { decodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import type { SessionIdentity } from "../auth.ts";
import type { ChatMessage } from "../chat/types.ts";
import { isObject } from "../engines/engine.ts";
import { answeredMessage, type ComparableMessage, comparable, isPrefix } from "./conversation.ts";

/** Newest captures read from the store per lookup; older parents are not worth the reads. */
export const MAX_STORE_SCAN = 32;

export type Lookup =
  /** `answered`: the parent's answer as the harness sent it back, right before the delta. */
  | { kind: "extends"; parent: CaptureRecord; delta: ChatMessage[]; answered: ChatMessage }
  /** The same messages as a spliced capture: the harness retried it, the same prompt ids apply. */
  | { kind: "retry"; of: CaptureRecord }
  | { kind: "none"; reason: FallbackReason };

export type FallbackReason =
  | "no_prior_capture"
  | "new_conversation"
  | "compaction"
  | "history_edited"
  | "parent_without_ids"
  | "media"
  | "tools_changed"
  | "template_kwargs_changed"
  | "render_mismatch"
  | "render_failed"
  | "closing_token_mismatch"
  | "tool_result_without_call"
  | "retry"
  | "engine_ignored_token_prompt";

/**
 * The last capture of each session, least recently used evicted first. Entries hold what a lookup
 * reads (the upstream body and the ids), not the client's body: a long session's entry is a few
 * hundred KB, so the default bound keeps the cache well under 100 MB.
 */
export class SessionCaptureCache {
  readonly #max: number;
  readonly #entries = new Map<string, CaptureRecord>();
  constructor(max = 256) {
    this.#max = max;
  }
  get(key: string): CaptureRecord | undefined {
    const rec = this.#entries.get(key);
    if (rec) {
      this.#entries.delete(key);
      this.#entries.set(key, rec);
    }
    return rec;
  }
  set(key: string, rec: CaptureRecord): void {
    this.#entries.delete(key);
    this.#entries.set(key, { ...rec, request: null });
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value as string);
  }
}

export function sessionKey(id: Pick<SessionIdentity, "taskId" | "sessionId" | "attempt">): string {
  return `${id.taskId}/${id.sessionId}/${id.attempt}`;
}

/** The messages a capture's next call should start with. */
export function conversationOf(rec: CaptureRecord): ComparableMessage[] | null {
  const req = rec.chat_request;
  if (!isObject(req) || !Array.isArray(req.messages)) return null;
  const answer = answeredMessage(rec.response);
  if (!answer) return null;
  return [...(req.messages as ChatMessage[]), answer].map(comparable);
}

export async function findParent(
  store: ObjectStore,
  cache: SessionCaptureCache,
  identity: SessionIdentity,
  incoming: ChatMessage[],
): Promise<Lookup> {
  const want = incoming.map(comparable);
  const cached = cache.get(sessionKey(identity));
  if (cached) {
    const hit = match(cached, want, incoming);
    // Anything but a clean hit is settled by the store: a newer capture may exist (another isolate).
    if (hit && hit.kind !== "none") return hit;
  }
  const listed = (await store.list(keys.capturesOfSession(identity.taskId, identity.sessionId))).sort();
  let newest: CaptureRecord | null = null;
  let scanned = 0;
  for (let i = listed.length - 1; i >= 0 && scanned < MAX_STORE_SCAN; i--) {
    const bytes = await store.get(listed[i]);
    if (!bytes) continue;
    const rec = await decodeCapture(bytes).catch(() => null);
    if (!rec || rec.attempt !== identity.attempt || rec.error !== null) continue;
    scanned++;
    newest ??= rec;
    const hit = match(rec, want, incoming);
    if (hit) return hit;
  }
  return { kind: "none", reason: whyNoParent(newest, want) };
}

/** null when `rec` is neither a prefix of the incoming conversation nor the same request. */
function match(rec: CaptureRecord, want: ComparableMessage[], incoming: ChatMessage[]): Lookup | null {
  const asked = requestOf(rec);
  if (asked && asked.length === want.length && isPrefix(asked, want)) {
    return rec.tito === "spliced" && rec.prompt_token_ids !== null
      ? { kind: "retry", of: rec }
      : { kind: "none", reason: "retry" };
  }
  const conv = conversationOf(rec);
  if (!conv || conv.length >= want.length || !isPrefix(conv, want)) return null;
  if (rec.prompt_token_ids === null || rec.response_token_ids === null) {
    return { kind: "none", reason: "parent_without_ids" };
  }
  const delta = incoming.slice(conv.length);
  // A later turn of this capture's conversation no longer matches what the harness sends.
  if (delta.some((m) => m.role === "assistant")) return { kind: "none", reason: "history_edited" };
  return { kind: "extends", parent: rec, delta, answered: incoming[conv.length - 1] };
}

function requestOf(rec: CaptureRecord): ComparableMessage[] | null {
  const req = rec.chat_request;
  return isObject(req) && Array.isArray(req.messages)
    ? (req.messages as ChatMessage[]).map(comparable)
    : null;
}

/** The reason recorded (and counted by reconstruction) when no capture is a prefix. */
function whyNoParent(newest: CaptureRecord | null, want: ComparableMessage[]): FallbackReason {
  if (!newest) return "no_prior_capture";
  const conv = conversationOf(newest);
  if (!conv || conv.length === 0) return "no_prior_capture";
  // A different opening message is another conversation in the same session (a sub-agent, a side call).
  if (conv[0].role !== want[0]?.role || conv[0].text !== want[0]?.text) return "new_conversation";
  // Harnesses compact by replacing the history with a shorter summary.
  if (want.length < conv.length) return "compaction";
  return "history_edited";
}

/**
 * The request the proxy actually sent upstream for a capture. A normal call posts `chat_request`
 * to `/v1/chat/completions`; a token-in-token-out call posts a token prompt on one of the
 * engines' token channels (docs/tito.md), recorded as `upstream_request`. Its token array is left
 * out when it equals the capture's `prompt_token_ids` (the engine confirmed it), so a spliced
 * call does not store its prompt twice; `upstreamRequestOf` puts it back.
 */
import type { CaptureRecord } from "./schemas/capture.ts";
import { TOKEN_CHANNELS, type TokenChannel } from "./token-channels.ts";

export interface UpstreamRequest {
  path: string;
  body: Record<string, unknown>;
}

/** The exact path and body posted upstream for `cap`. */
export function upstreamRequestOf(cap: CaptureRecord): UpstreamRequest {
  const sent = cap.upstream_request;
  if (!sent) return { path: "/v1/chat/completions", body: cap.chat_request as Record<string, unknown> };
  const where = TOKEN_CHANNELS[sent.token_channel];
  const body = structuredClone(sent.body) as Record<string, unknown>;
  if (getAt(body, where.ids) === undefined && cap.prompt_token_ids)
    setAt(body, where.ids, cap.prompt_token_ids);
  return { path: where.path, body };
}

/** The body to record: without its token prompt when that equals the ids the engine reported. */
export function recordedBody(
  channel: TokenChannel,
  body: Record<string, unknown>,
  reportedPromptIds: readonly number[] | null,
): Record<string, unknown> {
  const path = TOKEN_CHANNELS[channel].ids;
  const ids = getAt(body, path);
  if (!reportedPromptIds || !Array.isArray(ids) || !sameIds(ids, reportedPromptIds)) return body;
  // Copies only along the path: the messages stay shared with the chat body.
  const copy = { ...body };
  if (path.length === 1) delete copy[path[0]];
  else {
    const inner = { ...(body[path[0]] as Record<string, unknown>) };
    delete inner[path[1]];
    copy[path[0]] = inner;
  }
  return copy;
}

function sameIds(a: readonly unknown[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function getAt(obj: Record<string, unknown>, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function setAt(obj: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let cur = obj;
  for (const k of path.slice(0, -1)) {
    if (cur[k] === null || typeof cur[k] !== "object") cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[path[path.length - 1]] = value;
}

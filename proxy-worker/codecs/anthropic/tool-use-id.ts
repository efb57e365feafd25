import { derivedId } from "../common/derived-id.ts";

/**
 * tool_use ids must round-trip: the id we emit comes back as `tool_result.tool_use_id`, and must go
 * upstream as the same `tool_call_id` the engine produced, or the next prompt's tokens differ.
 * The Anthropic API only accepts `^[a-zA-Z0-9_-]+$`, so an upstream id outside that set (Kimi's
 * `functions.bash:0`) is wrapped reversibly in base64url instead of replaced: no state needed.
 */
const VALID = /^[A-Za-z0-9_-]+$/;
const WRAPPED = "toolu_b64_";

function base64UrlEncode(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function base64UrlDecode(text: string): string | undefined {
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The client-facing id for upstream tool call `index` of chat answer `chatId`. */
export function toToolUseId(upstreamId: string | undefined, chatId: string, index: number): string {
  if (!upstreamId) return derivedId("toolu_", chatId, "tool", index);
  if (VALID.test(upstreamId) && !upstreamId.startsWith(WRAPPED)) return upstreamId;
  return WRAPPED + base64UrlEncode(upstreamId);
}

/** The upstream `tool_call_id` for an id the client sent back. */
export function fromToolUseId(id: string): string {
  if (!id.startsWith(WRAPPED)) return id;
  return base64UrlDecode(id.slice(WRAPPED.length)) ?? id;
}

/**
 * Codex runs with `store:false` and `include:["reasoning.encrypted_content"]`: it keeps each
 * reasoning item's `encrypted_content` opaque and sends it back verbatim on the next turn, while it
 * drops `reasoning_text` content. We have no secret to hide, so the "encryption" is a marked base64
 * of the exact reasoning text. Decoding it gives back the text byte for byte, which keeps the next
 * prompt a token prefix of this one (prefix merging depends on it). Foreign envelopes (from a real
 * OpenAI backend) do not carry the marker and are ignored.
 */
const MARKER = "polar-reasoning-v1:";

function utf8ToBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function encodeReasoningEnvelope(text: string): string {
  return MARKER + utf8ToBase64(text);
}

/** The reasoning text inside one of our envelopes, or undefined for anything else. */
export function decodeReasoningEnvelope(envelope: string | null | undefined): string | undefined {
  if (typeof envelope !== "string" || !envelope.startsWith(MARKER)) return undefined;
  try {
    const binary = atob(envelope.slice(MARKER.length));
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

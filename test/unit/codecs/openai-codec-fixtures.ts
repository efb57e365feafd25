import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import type { DecodedRequest, EncodeContext, ProviderCodec } from "../../../proxy-worker/codecs/codec.ts";

/** Fixed clock for every encode: outputs must not depend on when the test runs. */
export const NOW = 1_790_000_100;

export function fixtureDir(codec: "openai-chat" | "openai-responses"): string {
  return fileURLToPath(new URL(`../../../proxy-worker/codecs/${codec}/__fixtures__/`, import.meta.url));
}

export function loadFixture<T = unknown>(codec: "openai-chat" | "openai-responses", name: string): T {
  return JSON.parse(readFileSync(`${fixtureDir(codec)}${name}`, "utf8")) as T;
}

export function encodeContext(
  codec: ProviderCodec,
  body: unknown,
): { decoded: DecodedRequest; ctx: EncodeContext } {
  const decoded = codec.decodeRequest(body, { path: "/v1/x", query: new URLSearchParams() });
  return { decoded, ctx: { decoded, now: NOW } };
}

export function upstream(codec: "openai-chat" | "openai-responses", name: string): ChatResponse {
  return loadFixture<ChatResponse>(codec, name);
}

/** The JSON payloads of `data:` lines, in order (the `[DONE]` sentinel kept as a string). */
export function dataPayloads(frames: string[]): unknown[] {
  return frames.map((frame) => {
    const line = frame.split("\n").find((l) => l.startsWith("data: "));
    if (!line) throw new Error(`frame without data line: ${JSON.stringify(frame)}`);
    const payload = line.slice("data: ".length);
    return payload === "[DONE]" ? payload : JSON.parse(payload);
  });
}

/** An `openai` SDK fetch that answers every request with one canned SSE body. */
export function sseFetch(frames: string[]): typeof fetch {
  return async () => new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
}

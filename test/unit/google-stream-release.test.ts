import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../proxy-worker/chat/types.ts";
import { googleStreamEncoder } from "../../proxy-worker/codecs/google/stream-encoder.ts";

/**
 * A live Google stream sends each record when the engine chunk that made it is folded in (the first
 * byte is not a token late), yet the record carrying finishReason still waits for the terminal event,
 * which goes out only after the capture is stored.
 */
const ctx = { decoded: { chat: { model: "m", messages: [] }, stream: true, model: "gemini-x" }, now: 1 };
const final = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "Hi there" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
} as unknown as ChatResponse;
const parse = (frames: string[]) => frames.map((f) => JSON.parse(f.replace(/^data: /, "")));

describe("Google stream encoder: release after each engine chunk", () => {
  it("the first record goes out at once; the one with finishReason is the terminal event", () => {
    const enc = googleStreamEncoder(ctx as never);
    expect(enc.start({ id: "chatcmpl-1", usage: null })).toEqual([]);
    expect(enc.delta({ kind: "role", choice: 0 })).toEqual([]);
    expect(enc.delta({ kind: "content", choice: 0, text: "Hi" })).toEqual([]);
    const first = parse(enc.release?.() ?? []);
    expect(first).toHaveLength(1);
    expect(first[0].candidates[0].content.parts).toEqual([{ text: "Hi" }]);
    expect(first[0].candidates[0].finishReason).toBeUndefined();
    // The engine's last chunk: the last token and the finish reason together.
    expect(enc.delta({ kind: "content", choice: 0, text: " there" })).toEqual([]);
    expect(enc.delta({ kind: "finish", choice: 0, reason: "stop" })).toEqual([]);
    expect(enc.release?.()).toEqual([]);
    expect(enc.finish(final)).toEqual([]);
    const [last] = parse(enc.terminal());
    expect(last.candidates[0]).toMatchObject({
      content: { parts: [{ text: " there" }] },
      finishReason: "STOP",
    });
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: 3, candidatesTokenCount: 2 });
  });

  it("a finish after the last part went out gets a record without parts, held for the terminal event", () => {
    const enc = googleStreamEncoder(ctx as never);
    enc.start({ id: "chatcmpl-1", usage: null });
    enc.delta({ kind: "content", choice: 0, text: "Hi there" });
    expect(parse(enc.release?.() ?? [])).toHaveLength(1);
    expect(enc.delta({ kind: "finish", choice: 0, reason: "stop" })).toEqual([]);
    expect(enc.release?.()).toEqual([]);
    enc.finish(final);
    const [last] = parse(enc.terminal());
    expect(last.candidates[0]).toMatchObject({ content: { role: "model", parts: [] }, finishReason: "STOP" });
  });
});

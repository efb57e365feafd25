import { readFileSync } from "node:fs";
import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import { anthropicCodec, encodeAnthropicStreamError } from "../../../proxy-worker/codecs/anthropic/index.ts";
import type { EncodeContext } from "../../../proxy-worker/codecs/codec.ts";

const FIXTURES = new URL("../../../proxy-worker/codecs/anthropic/__fixtures__/", import.meta.url);
const upstream = (name: string): ChatResponse =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8"));
const ctx: EncodeContext = {
  decoded: { chat: { model: "claude-sonnet-4-5", messages: [] }, stream: true, model: "claude-sonnet-4-5" },
  now: 1795312800,
};

/** An SDK client whose fetch answers with the given body: nothing touches the network. */
function clientAnswering(body: string, contentType: string): Anthropic {
  return new Anthropic({
    apiKey: "x",
    baseURL: "http://127.0.0.1:1",
    maxRetries: 0,
    fetch: async () => new Response(body, { status: 200, headers: { "content-type": contentType } }),
  });
}

/** The SDK's MessageStream adds `parsed_output` (its structured-output helper): not part of the wire answer. */
function wireFields(message: unknown): unknown {
  return JSON.parse(JSON.stringify(message), (key, value) => (key === "parsed_output" ? undefined : value));
}

// A model name the SDK has no deprecation notice for (the harness names whatever the policy serves).
const params = {
  model: "polar-policy",
  max_tokens: 1024,
  messages: [{ role: "user" as const, content: "go" }],
};

describe("official @anthropic-ai/sdk reads our answers", () => {
  for (const name of [
    "upstream-text",
    "upstream-tool-calls-parallel",
    "upstream-length",
    "upstream-stop-sequence",
  ]) {
    it(`${name}: MessageStream.finalMessage() equals the non-streaming answer`, async () => {
      const chat = upstream(name);
      const sse = anthropicCodec.encodeStream(chat, ctx).join("");
      const stream = clientAnswering(sse, "text/event-stream").messages.stream(params);
      const events: string[] = [];
      stream.on("streamEvent", (event) => events.push(event.type));
      const final = await stream.finalMessage();
      const expected = anthropicCodec.encodeResponse(chat, ctx);
      expect(wireFields(final)).toEqual(expected);
      expect(events[0]).toBe("message_start");
      expect(events.at(-1)).toBe("message_stop");
    });

    it(`${name}: messages.create() accepts the JSON answer`, async () => {
      const chat = upstream(name);
      const expected = anthropicCodec.encodeResponse(chat, ctx);
      const message = await clientAnswering(JSON.stringify(expected), "application/json").messages.create(
        params,
      );
      expect(JSON.parse(JSON.stringify(message))).toEqual(expected);
    });
  }

  it("hands tool input to the SDK through input_json_delta", async () => {
    const chat = upstream("upstream-tool-calls-parallel");
    const stream = clientAnswering(
      anthropicCodec.encodeStream(chat, ctx).join(""),
      "text/event-stream",
    ).messages.stream(params);
    const inputs: unknown[] = [];
    stream.on("inputJson", (_partial, snapshot) => inputs.push(snapshot));
    const final = await stream.finalMessage();
    expect(inputs).toEqual([
      { command: "npm test", description: "Run the test suite" },
      { file_path: "/work/task/src/math.ts" },
    ]);
    expect(final.content.filter((b) => b.type === "tool_use").map((b) => b.input)).toEqual(inputs);
  });

  it("raises a mid-stream error event as an APIError carrying our message", async () => {
    const frames = anthropicCodec.encodeStream(upstream("upstream-text"), ctx);
    const sse = frames.slice(0, 3).join("") + encodeAnthropicStreamError(529, "engine overloaded");
    const stream = clientAnswering(sse, "text/event-stream").messages.stream(params);
    await expect(stream.finalMessage()).rejects.toThrow(/engine overloaded/);
  });
});

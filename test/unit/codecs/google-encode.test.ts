import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ChatResponse } from "../../../proxy-worker/chat/types.ts";
import type { EncodeContext } from "../../../proxy-worker/codecs/codec.ts";
import { encodeGoogleStreamError, googleCodec } from "../../../proxy-worker/codecs/google/index.ts";

const FIXTURES = new URL("../../../proxy-worker/codecs/google/__fixtures__/", import.meta.url);
const upstream = (name: string): ChatResponse =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8"));
const ctxFor = (includeThoughts: boolean): EncodeContext => ({
  decoded: {
    chat: { model: "gemini-2.5-pro", messages: [] },
    stream: true,
    model: "gemini-2.5-pro",
    state: { includeThoughts },
  },
  now: 1795312800,
});
const ctx = ctxFor(true);
const SCENARIOS = ["upstream-routing-json", "upstream-tool-calls-parallel", "upstream-length"];

/** `data: <one-line JSON>\n\n` records only; anything else fails. */
function parseRecords(frames: string[]): Record<string, unknown>[] {
  return frames.map((frame) => {
    expect(frame).toMatch(/^data: [^\n]+\n\n$/);
    return JSON.parse(frame.slice(6));
  });
}

type Body = {
  candidates: { content: { parts: Record<string, unknown>[] }; finishReason?: string; index: number }[];
  usageMetadata?: Record<string, number>;
};

describe("google encode: fixtures", () => {
  for (const name of SCENARIOS) {
    it(`${name}: response and stream match the recorded answers`, async () => {
      const chat = upstream(name);
      await expect(`${JSON.stringify(googleCodec.encodeResponse(chat, ctx), null, 2)}\n`).toMatchFileSnapshot(
        new URL(`expected/${name}.response.json`, FIXTURES).pathname,
      );
      await expect(googleCodec.encodeStream(chat, ctx).join("")).toMatchFileSnapshot(
        new URL(`expected/${name}.chunks.txt`, FIXTURES).pathname,
      );
    });
  }
});

describe("google encode: rules", () => {
  it("returns upstream tool-call ids as functionCall.id and finishes tool calls with STOP", () => {
    const body = googleCodec.encodeResponse(upstream("upstream-tool-calls-parallel"), ctx) as Body;
    const calls = body.candidates[0].content.parts
      .filter((p) => "functionCall" in p)
      .map((p) => p.functionCall);
    expect(calls).toEqual([
      {
        id: "chatcmpl-tool-0a9b8c7d6e5f4a3b",
        name: "run_shell_command",
        args: { command: "npm test", description: "Re-run the tests" },
      },
      { id: "chatcmpl-tool-1c2d3e4f5a6b7c8d", name: "run_shell_command", args: { command: "git diff" } },
    ]);
    expect(body.candidates[0].finishReason).toBe("STOP");
    expect(body.usageMetadata).toEqual({
      promptTokenCount: 4210,
      candidatesTokenCount: 66,
      totalTokenCount: 4276,
      cachedContentTokenCount: 4096,
    });
  });

  it("returns thought parts only when includeThoughts was asked", () => {
    const chat = upstream("upstream-routing-json");
    const withThoughts = googleCodec.encodeResponse(chat, ctxFor(true)) as Body;
    const without = googleCodec.encodeResponse(chat, ctxFor(false)) as Body;
    expect(withThoughts.candidates[0].content.parts[0]).toEqual({
      text: "Short, bounded task.",
      thought: true,
    });
    expect(without.candidates[0].content.parts).toHaveLength(1);
    expect(JSON.parse(without.candidates[0].content.parts[0].text as string)).toMatchObject({
      model_choice: "flash",
    });
  });

  it("maps finish reasons", () => {
    const chat = upstream("upstream-length");
    const finish = (reason: string) => {
      chat.choices[0].finish_reason = reason;
      return (googleCodec.encodeResponse(chat, ctx) as Body).candidates[0].finishReason;
    };
    expect([
      finish("stop"),
      finish("length"),
      finish("tool_calls"),
      finish("content_filter"),
      finish("abort"),
    ]).toEqual(["STOP", "MAX_TOKENS", "STOP", "SAFETY", "OTHER"]);
  });

  it("counts reasoning tokens as thoughts when the engine reports them", () => {
    const chat = upstream("upstream-length");
    (chat.usage as unknown as Record<string, unknown>).completion_tokens_details = { reasoning_tokens: 10 };
    expect((googleCodec.encodeResponse(chat, ctx) as Body).usageMetadata).toEqual({
      promptTokenCount: 4210,
      candidatesTokenCount: 6,
      thoughtsTokenCount: 10,
      totalTokenCount: 4226,
    });
  });

  it("streams one record per part; only the last carries finishReason and usageMetadata", () => {
    for (const name of SCENARIOS) {
      const chat = upstream(name);
      const records = parseRecords(googleCodec.encodeStream(chat, ctx)) as Body[];
      const body = googleCodec.encodeResponse(chat, ctx) as Body;
      expect(records.flatMap((r) => r.candidates[0].content.parts)).toEqual(body.candidates[0].content.parts);
      expect(
        records.slice(0, -1).every((r) => r.candidates[0].finishReason === undefined && !r.usageMetadata),
      ).toBe(true);
      expect(records.at(-1)?.candidates[0].finishReason).toBe(body.candidates[0].finishReason);
      expect(records.at(-1)?.usageMetadata).toEqual(body.usageMetadata);
    }
  });

  it("encodes every candidate when the client asked for several", () => {
    const chat = upstream("upstream-length");
    chat.choices.push({
      index: 1,
      message: { role: "assistant", content: "Second." },
      finish_reason: "stop",
    });
    const body = googleCodec.encodeResponse(chat, ctx) as Body;
    expect(body.candidates.map((c) => [c.index, c.finishReason, c.content.parts.length])).toEqual([
      [0, "MAX_TOKENS", 1],
      [1, "STOP", 1],
    ]);
    const records = parseRecords(googleCodec.encodeStream(chat, ctx)) as Body[];
    expect(records.map((r) => [r.candidates[0].index, r.candidates[0].finishReason])).toEqual([
      [0, "MAX_TOKENS"],
      [1, "STOP"],
    ]);
    expect(records.at(-1)?.usageMetadata).toEqual(body.usageMetadata);
  });

  it("an empty answer still streams one record with the finish reason", () => {
    const chat = upstream("upstream-length");
    chat.choices[0].message.content = "";
    const records = parseRecords(googleCodec.encodeStream(chat, ctx)) as Body[];
    expect(records).toHaveLength(1);
    expect(records[0].candidates[0]).toEqual({
      content: { role: "model", parts: [] },
      index: 0,
      finishReason: "MAX_TOKENS",
    });
  });
});

describe("google ids round-trip", () => {
  it("functionCall.id comes back in functionResponse.id and goes upstream as the same tool_call_id", () => {
    const chat = upstream("upstream-tool-calls-parallel");
    const body = googleCodec.encodeResponse(chat, ctx) as Body;
    const modelParts = body.candidates[0].content.parts;
    const responses = modelParts
      .filter((p) => "functionCall" in p)
      .reverse()
      .map((p) => {
        const call = p.functionCall as { id: string; name: string };
        return { functionResponse: { id: call.id, name: call.name, response: { output: "ok" } } };
      });
    const next = googleCodec.decodeRequest(
      {
        contents: [
          { role: "user", parts: [{ text: "go" }] },
          { role: "model", parts: modelParts },
          { role: "user", parts: responses },
        ],
      },
      { path: "/v1beta/models/m:generateContent", query: new URLSearchParams(), pathModel: "m" },
    );
    const upstreamIds = chat.choices[0].message.tool_calls?.map((c) => c.id);
    expect(next.chat.messages[1].tool_calls?.map((c) => c.id)).toEqual(upstreamIds);
    expect(next.chat.messages[1].reasoning).toBe("Run the tests again and check the diff.");
    expect(next.chat.messages.slice(2).map((m) => m.tool_call_id)).toEqual(
      [...(upstreamIds ?? [])].reverse(),
    );
  });
});

describe("google errors", () => {
  it("uses canonical status names", () => {
    const table: [number, string][] = [
      [400, "INVALID_ARGUMENT"],
      [401, "UNAUTHENTICATED"],
      [403, "PERMISSION_DENIED"],
      [404, "NOT_FOUND"],
      [413, "INVALID_ARGUMENT"],
      [429, "RESOURCE_EXHAUSTED"],
      [500, "INTERNAL"],
      [503, "UNAVAILABLE"],
      [418, "FAILED_PRECONDITION"],
    ];
    for (const [code, status] of table) {
      expect(googleCodec.encodeError(code, "why")).toEqual({ error: { code, message: "why", status } });
    }
    expect(encodeGoogleStreamError(503, "down")).toBe(
      'data: {"error":{"code":503,"message":"down","status":"UNAVAILABLE"}}\n\n',
    );
  });
});

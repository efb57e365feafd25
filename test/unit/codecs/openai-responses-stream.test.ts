// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  encodeResponsesFailedStream,
  openaiResponsesCodec,
} from "../../../proxy-worker/codecs/openai-responses/index.ts";
import {
  dataPayloads,
  encodeContext,
  fixtureDir,
  loadFixture,
  sseFetch,
  upstream,
} from "./openai-codec-fixtures.ts";

const UPSTREAMS = [
  "upstream-reasoning-exec",
  "upstream-apply-patch",
  "upstream-parallel-tool-calls",
  "upstream-text",
  "upstream-length",
];
const dir = fixtureDir("openai-responses");

/** Fields the SDK's parse helpers add to a final response (`output_text`, `*parsed*`): not on the wire. */
function withoutSdkAdditions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSdkAdditions);
  if (!value || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === "output_text" || key === "output_parsed" || key === "parsed" || key === "parsed_arguments")
      continue;
    out[key] = withoutSdkAdditions(inner);
  }
  return out;
}
const request = loadFixture<Record<string, any>>("openai-responses", "codex-turn1.request.json");
const { ctx } = encodeContext(openaiResponsesCodec, request);

function stream(name: string) {
  const frames = openaiResponsesCodec.encodeStream(upstream("openai-responses", `${name}.json`), ctx);
  return { frames, events: dataPayloads(frames) as Record<string, any>[] };
}

describe("openai responses codec: event stream", () => {
  it.each(UPSTREAMS)(
    "%s: named, numbered frames from response.created to response.completed",
    async (name) => {
      const { frames, events } = stream(name);
      frames.forEach((frame, i) => {
        expect(frame).toBe(`event: ${events[i].type}\ndata: ${JSON.stringify(events[i])}\n\n`);
      });
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      expect(events[0].type).toBe("response.created");
      expect(events[0].response.status).toBe("in_progress");
      expect(events[1].type).toBe("response.in_progress");
      const last = events.at(-1) as Record<string, any>;
      expect(last.type).toBe("response.completed");
      const final = openaiResponsesCodec.encodeResponse(upstream("openai-responses", `${name}.json`), ctx);
      expect(last.response).toEqual(final);
      expect(frames.join("")).not.toContain("[DONE]");
      for (const event of events.slice(2, -1)) {
        expect(event.output_index, event.type).toEqual(expect.any(Number));
        if (event.type !== "response.output_item.added" && event.type !== "response.output_item.done") {
          expect(event.item_id, event.type).toBe(last.response.output[event.output_index].id);
        }
        if (/content_part|output_text/.test(event.type)) expect(event.content_index).toBe(0);
        if (/reasoning_summary/.test(event.type)) expect(event.summary_index).toBe(0);
      }
      const done = events.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
      expect(done).toEqual(last.response.output);
      await expect(frames.join("")).toMatchFileSnapshot(`${dir}expected/${name}.events.txt`);
    },
  );

  it("reasoning, text and two calls come in the reference order", () => {
    expect(
      stream("upstream-parallel-tool-calls").events.map((e) => `${e.type}${e.output_index ?? ""}`),
    ).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added0",
      "response.reasoning_summary_part.added0",
      "response.reasoning_summary_text.delta0",
      "response.reasoning_summary_text.done0",
      "response.reasoning_summary_part.done0",
      "response.output_item.done0",
      "response.output_item.added1",
      "response.content_part.added1",
      "response.output_text.delta1",
      "response.output_text.done1",
      "response.content_part.done1",
      "response.output_item.done1",
      "response.output_item.added2",
      "response.function_call_arguments.delta2",
      "response.function_call_arguments.done2",
      "response.output_item.done2",
      "response.output_item.added3",
      "response.function_call_arguments.delta3",
      "response.function_call_arguments.done3",
      "response.output_item.done3",
      "response.completed",
    ]);
  });

  it("freeform tool input streams as custom_tool_call_input", () => {
    const { events } = stream("upstream-apply-patch");
    const types = events.map((e) => e.type);
    expect(types).toContain("response.custom_tool_call_input.delta");
    const done = events.find((e) => e.type === "response.custom_tool_call_input.done");
    expect(done?.input).toBe(
      "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello\n*** End Patch\n",
    );
    expect(events.find((e) => e.type === "response.output_item.added")?.item).toMatchObject({
      type: "custom_tool_call",
      status: "in_progress",
      input: "",
    });
  });

  it("truncated output still ends with response.completed, status incomplete inside", () => {
    const last = stream("upstream-length").events.at(-1) as Record<string, any>;
    expect(last.type).toBe("response.completed");
    expect(last.response.status).toBe("incomplete");
    expect(last.response.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });

  it("a failed stream ends with response.failed carrying the error", () => {
    const events = dataPayloads(
      encodeResponsesFailedStream({ id: "chatcmpl-x" }, ctx, "upstream down"),
    ) as any[];
    expect(events.map((e) => e.type)).toEqual(["response.created", "response.failed"]);
    expect(events[1].response).toMatchObject({
      status: "failed",
      error: { code: "server_error", message: "upstream down" },
    });
  });
});

/**
 * What Codex's Rust client (codex-api sse/responses.rs, protocol models.rs) deserializes: serde
 * drops an `output_item.done` whose item does not match, and fails the turn when
 * `response.completed` lacks an id or integer usage. Mirrored here field for field.
 */
const int = z.number().int();
const CodexItem = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("message"),
    role: z.string(),
    content: z.array(z.object({ type: z.enum(["input_text", "output_text"]), text: z.string() })),
  }),
  z.object({
    type: z.literal("reasoning"),
    id: z.string(),
    summary: z.array(z.object({ type: z.literal("summary_text"), text: z.string() })),
    encrypted_content: z.string().nullish(),
  }),
  z.object({
    type: z.literal("function_call"),
    name: z.string(),
    arguments: z.string(),
    call_id: z.string(),
  }),
  z.object({ type: z.literal("custom_tool_call"), call_id: z.string(), name: z.string(), input: z.string() }),
]);
const CodexCompleted = z.object({
  id: z.string(),
  usage: z.object({
    input_tokens: int,
    input_tokens_details: z.object({ cached_tokens: int }).nullish(),
    output_tokens: int,
    output_tokens_details: z.object({ reasoning_tokens: int }).nullish(),
    total_tokens: int,
  }),
});

describe("openai responses codec: what Codex's client deserializes", () => {
  it.each(UPSTREAMS)("%s: every done item and the completed response parse as Codex types", (name) => {
    const { events } = stream(name);
    const done = events.filter((e) => e.type === "response.output_item.done");
    expect(done.length).toBeGreaterThan(0);
    for (const event of done) expect(CodexItem.safeParse(event.item).error).toBeUndefined();
    const completed = events.find((e) => e.type === "response.completed");
    expect(CodexCompleted.safeParse(completed?.response).error).toBeUndefined();
    for (const event of events.filter((e) => e.type === "response.reasoning_summary_text.delta")) {
      expect(event.summary_index).toEqual(expect.any(Number));
    }
  });
});

describe("openai responses codec: the official openai SDK reads our streams", () => {
  it.each(UPSTREAMS)("%s: finalResponse() equals encodeResponse()", async (name) => {
    const chat = upstream("openai-responses", `${name}.json`);
    const client = new OpenAI({
      apiKey: "x",
      baseURL: "http://127.0.0.1:1/v1",
      maxRetries: 0,
      fetch: sseFetch(openaiResponsesCodec.encodeStream(chat, ctx)),
    });
    const expected = openaiResponsesCodec.encodeResponse(chat, ctx) as Record<string, any>;
    const seen: string[] = [];
    const sdkStream = client.responses.stream({
      model: request.model,
      input: request.input,
      tools: request.tools,
    });
    sdkStream.on("event", (event) => seen.push(event.type));
    // The SDK accumulates deltas into its own snapshot and throws on a bad output/content index.
    let textSnapshot = "";
    const argumentSnapshots: string[] = [];
    sdkStream.on("response.output_text.delta", (event) => {
      textSnapshot = event.snapshot;
    });
    sdkStream.on("response.function_call_arguments.delta", (event) => argumentSnapshots.push(event.snapshot));
    const final = (await sdkStream.finalResponse()) as unknown as Record<string, any>;
    const outputText = final.output_text;
    expect(withoutSdkAdditions(final)).toEqual(expected);
    const message = expected.output.find((i: { type: string }) => i.type === "message");
    expect(outputText).toBe(message ? message.content[0].text : "");
    expect(textSnapshot).toBe(message ? message.content[0].text : "");
    expect(argumentSnapshots).toEqual(
      expected.output
        .filter((i: { type: string }) => i.type === "function_call")
        .map((i: { arguments: string }) => i.arguments),
    );
    expect(seen[0]).toBe("response.created");
    expect(seen.at(-1)).toBe("response.completed");
  });
});

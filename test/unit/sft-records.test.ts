import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { type EncodeAnswer, loadAnswerEncoder } from "../../sft/provider-answer.ts";
import { chatRecord, isTrainable, tokenRecord } from "../../sft/sft-records.ts";
import type { CaptureRecord, Provider } from "../../shared/schemas/capture.ts";
import { type SessionResult, Trace } from "../../shared/schemas/trajectory.ts";

const fixture = (path: string) =>
  JSON.parse(readFileSync(new URL(`../../proxy-worker/codecs/${path}`, import.meta.url), "utf8")) as Record<
    string,
    unknown
  >;

function capture(provider: Provider, path: string, request: unknown, response: unknown): CaptureRecord {
  return {
    v: 1,
    capture_id: "01JCAPTURE0000000000000002",
    session_id: "s-0",
    task_id: "t",
    attempt: 0,
    started_at: "2026-11-22T00:00:00.000Z",
    ended_at: "2026-11-22T00:00:01.000Z",
    provider,
    path,
    stream: false,
    model_requested: "policy",
    model_served: "policy",
    request,
    chat_request: {},
    response,
    prompt_token_ids: [1, 2, 3],
    response_token_ids: [4, 5],
    response_logprobs: [-0.1, -0.2],
    finish_reason: "tool_calls",
    usage: null,
    policy_version: null,
    policy_version_end: null,
    sampling: null,
    parallel_tool_calls_disabled: false,
    error: null,
  };
}

const trace: Trace = Trace.parse({
  prompt_ids: [1, 2, 3],
  response_ids: [4, 5, 6, 7],
  loss_mask: [1, 1, 0, 1],
  response_logprobs: [-0.1, -0.2, 0, -0.3],
  reward: 1,
  finish_reason: "stop",
  capture_ids: ["01JCAPTURE0000000000000001", "01JCAPTURE0000000000000002"],
  policy_version: null,
  metadata: {},
});
const result = {
  task_id: "t",
  session_id: "s-0",
  sample_index: 0,
  status: "COMPLETED",
  reward: 1,
} as unknown as SessionResult;

let encode: EncodeAnswer;
beforeAll(async () => {
  encode = await loadAnswerEncoder();
});

describe("SFT chat records: the last request as sent plus the answer as received, per provider", () => {
  it("anthropic: system, messages + {role: assistant, content}, tools", () => {
    const req = fixture("anthropic/__fixtures__/claude-code-tool-turn.request.json");
    const upstream = fixture("anthropic/__fixtures__/upstream-tool-calls-parallel.json");
    const expected = fixture("anthropic/__fixtures__/expected/upstream-tool-calls-parallel.response.json");
    const rec = chatRecord(result, trace, 0, capture("anthropic", "/v1/messages", req, upstream), encode);
    const messages = rec.messages as unknown[];
    expect(messages.slice(0, -1)).toEqual(req.messages);
    expect(messages.at(-1)).toEqual({ role: "assistant", content: expected.content });
    expect(rec.system).toEqual(req.system);
    expect(rec.tools).toEqual(req.tools);
    expect(rec.polar).toMatchObject({
      provider: "anthropic",
      reward: 1,
      capture_id: "01JCAPTURE0000000000000002",
    });
  });

  it("openai_chat: messages + choices[0].message, tools", () => {
    const req = fixture("openai-chat/__fixtures__/opencode-main.request.json");
    const upstream = fixture("openai-chat/__fixtures__/upstream-parallel-tool-calls.json");
    const expected = fixture("openai-chat/__fixtures__/expected/upstream-parallel-tool-calls.response.json");
    const rec = chatRecord(
      result,
      trace,
      0,
      capture("openai_chat", "/v1/chat/completions", req, upstream),
      encode,
    );
    const messages = rec.messages as unknown[];
    expect(messages.slice(0, -1)).toEqual(req.messages);
    expect(messages.at(-1)).toEqual((expected.choices as { message: unknown }[])[0].message);
    expect(rec.tools).toEqual(req.tools);
  });

  it("openai_responses: instructions, input + output items, tools", () => {
    const req = fixture("openai-responses/__fixtures__/codex-turn2.request.json");
    const upstream = fixture("openai-responses/__fixtures__/upstream-parallel-tool-calls.json");
    const expected = fixture(
      "openai-responses/__fixtures__/expected/upstream-parallel-tool-calls.response.json",
    );
    const rec = chatRecord(
      result,
      trace,
      0,
      capture("openai_responses", "/v1/responses", req, upstream),
      encode,
    );
    const input = rec.input as unknown[];
    const sentInput =
      typeof req.input === "string" ? [{ role: "user", content: req.input }] : (req.input as unknown[]);
    expect(input.slice(0, sentInput.length)).toEqual(sentInput);
    expect(input.slice(sentInput.length)).toEqual(expected.output);
    expect(rec.instructions).toEqual(req.instructions);
    expect(rec.tools).toEqual(req.tools);
  });

  it("google: systemInstruction, contents + candidates[0].content, tools", () => {
    const sent = fixture("google/__fixtures__/gemini-cli-routing.request.json");
    // The expected answer was recorded with thoughts on: the same request shape, asking for them.
    const generationConfig = {
      ...(sent.generationConfig as object),
      thinkingConfig: { includeThoughts: true },
    };
    const req: Record<string, unknown> = { ...sent, generationConfig };
    const upstream = fixture("google/__fixtures__/upstream-tool-calls-parallel.json");
    const expected = fixture("google/__fixtures__/expected/upstream-tool-calls-parallel.response.json");
    const rec = chatRecord(
      result,
      trace,
      0,
      capture("google", "/v1beta/models/gemini-2.5-pro:generateContent", req, upstream),
      encode,
    );
    const contents = rec.contents as unknown[];
    expect(contents.slice(0, -1)).toEqual(req.contents);
    expect(contents.at(-1)).toEqual((expected.candidates as { content: unknown }[])[0].content);
    expect(rec.systemInstruction ?? null).toEqual(req.systemInstruction ?? null);
  });

  it("refuses a capture whose request is not an object", () => {
    expect(() =>
      chatRecord(result, trace, 0, capture("openai_chat", "/v1/chat/completions", "oops", {}), encode),
    ).toThrow();
  });
});

describe("SFT token records", () => {
  it("carry the trace's ids, mask and logprobs with their origin", () => {
    const rec = tokenRecord(result, trace, 3);
    expect(rec).toMatchObject({ prompt_ids: [1, 2, 3], response_ids: [4, 5, 6, 7], loss_mask: [1, 1, 0, 1] });
    expect(rec.polar).toEqual({
      task_id: "t",
      session_id: "s-0",
      sample_index: 0,
      trace_index: 3,
      reward: 1,
      status: "COMPLETED",
      capture_ids: trace.capture_ids,
    });
    expect(isTrainable(trace)).toBe(true);
    expect(isTrainable({ ...trace, loss_mask: [0, 0, 0, 0] })).toBe(false);
  });
});

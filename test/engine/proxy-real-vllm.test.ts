/**
 * The proxy in front of a real vLLM 0.32 (scripts/engine.sh: a tiny random-weight Qwen3 on the
 * CPU), driven by the official SDKs of all four provider APIs, streamed (live) and not. Every
 * capture must equal the engine's own greedy answer to the capture's recorded upstream request,
 * sent straight to the engine: prompt ids, sampled ids, logprobs (as stored, float32) and finish.
 * Random weights make the text noise; greedy sampling makes it reproducible.
 */
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseParserSpec } from "../../proxy-worker/tito/completions-channel.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { upstreamRequestOf } from "../../shared/upstream-request.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { ENGINE_MODEL, engineAnswer, realEngine } from "../support/real-engine.ts";

const engine = await realEngine();
const KEY = "real-engine-key";
const TASK = "real-engine";
const MAX = 12;
let seq = 0;

async function session(tito = false): Promise<{ id: string; token: string }> {
  const id = `s${++seq}`;
  return { id, token: await mintSessionToken({ sessionId: id, taskId: TASK, tokenInTokenOut: tito }, KEY) };
}

/** Each capture against the engine's answer to its recorded upstream request. */
async function expectEngineFaithful(store: TestProxy["store"], sessionId: string, calls: number) {
  const caps = await readCaptures(store, TASK, sessionId);
  expect(caps).toHaveLength(calls);
  for (const cap of caps) await expectEqualsReplay(cap);
  return caps;
}

export async function expectEqualsReplay(cap: CaptureRecord): Promise<void> {
  expect(cap.error).toBeNull();
  expect(cap.stream_status).toBe("complete");
  const sent = upstreamRequestOf(cap);
  const want = (await engineAnswer(engine.url, sent.path, sent.body)) as {
    prompt_token_ids: number[] | null;
    choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] }; finish_reason: string }[];
  };
  // The generate endpoint does not echo its prompt: the ids sent are the prompt.
  const prompt = sent.path === "/inference/v1/generate" ? sent.body.token_ids : want.prompt_token_ids;
  expect(cap.prompt_token_ids).toEqual(prompt);
  expect(cap.response_token_ids).toEqual(want.choices[0].token_ids);
  expect(cap.response_token_ids!.length).toBeGreaterThan(0);
  expect(cap.response_logprobs).toEqual(want.choices[0].logprobs.content.map((c) => Math.fround(c.logprob)));
  expect(cap.finish_reason).toBe(want.choices[0].finish_reason);
}

describe.skipIf(!engine.ok)(`proxy against a real vLLM (${engine.ok ? "running" : engine.reason})`, () => {
  for (const streamMode of ["live", "synthesize"] as const) {
    describe(`${streamMode} streams`, () => {
      let proxy: TestProxy;
      beforeAll(async () => {
        proxy = await startProxy({ upstream: engine.url, auth: { signingKey: KEY }, streamMode });
      });
      afterAll(() => proxy?.close());

      it("Anthropic Messages, streamed and not", async () => {
        const s = await session();
        const client = new Anthropic({ apiKey: s.token, baseURL: proxy.url, maxRetries: 0 });
        const req = {
          model: ENGINE_MODEL,
          max_tokens: MAX,
          temperature: 0,
          thinking: { type: "enabled" as const, budget_tokens: MAX },
          messages: [{ role: "user" as const, content: "Say something." }],
        };
        const json = await client.messages.create(req);
        const streamed = await client.messages.stream(req).finalMessage();
        expect(json.stop_reason).toBe("max_tokens");
        const texts = (m: Anthropic.Message) =>
          m.content.map((b) => ("thinking" in b ? b.thinking : "text" in b ? b.text : b.type));
        expect(texts(streamed)).toEqual(texts(json));
        await expectEngineFaithful(proxy.store, s.id, 2);
      });

      it("OpenAI Chat Completions, streamed and not", async () => {
        const s = await session();
        const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
        const req = {
          model: ENGINE_MODEL,
          max_tokens: MAX,
          temperature: 0,
          messages: [{ role: "user" as const, content: "Say something." }],
        };
        const json = await client.chat.completions.create(req);
        // Read the raw chunks: the SDK's accumulator keeps only the last delta of fields it does not
        // know, such as vLLM's `reasoning`.
        let reasoning = "";
        let usage: OpenAI.CompletionUsage | undefined;
        const stream = await client.chat.completions.create({
          ...req,
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const chunk of stream) {
          reasoning += (chunk.choices[0]?.delta as { reasoning?: string } | undefined)?.reasoning ?? "";
          usage = chunk.usage ?? usage;
        }
        expect(json.choices[0].finish_reason).toBe("length");
        expect(reasoning).toBe((json.choices[0].message as { reasoning?: string }).reasoning);
        expect(usage?.completion_tokens).toBe(MAX);
        await expectEngineFaithful(proxy.store, s.id, 2);
      });

      it("OpenAI Responses, streamed and not", async () => {
        const s = await session();
        const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
        const req = { model: ENGINE_MODEL, max_output_tokens: MAX, temperature: 0, input: "Say something." };
        const json = await client.responses.create(req);
        const streamed = await client.responses.stream(req).finalResponse();
        expect(json.status).toBe("incomplete");
        expect(streamed.output.map((o) => o.type)).toEqual(json.output.map((o) => o.type));
        await expectEngineFaithful(proxy.store, s.id, 2);
      });

      it("Google generateContent, streamed and not", async () => {
        const s = await session();
        const client = new GoogleGenAI({ apiKey: s.token, httpOptions: { baseUrl: proxy.url } });
        const req = {
          model: ENGINE_MODEL,
          contents: "Say something.",
          config: { temperature: 0, maxOutputTokens: MAX, thinkingConfig: { includeThoughts: true } },
        };
        const json = await client.models.generateContent(req);
        const chunks = [];
        for await (const c of await client.models.generateContentStream(req)) chunks.push(c);
        expect(json.candidates?.[0].finishReason).toBe("MAX_TOKENS");
        expect(chunks.at(-1)?.candidates?.[0].finishReason).toBe("MAX_TOKENS");
        await expectEngineFaithful(proxy.store, s.id, 2);
      });
    });
  }

  describe("token-in-token-out on the engine's chat token channel", () => {
    let proxy: TestProxy;
    beforeAll(async () => {
      proxy = await startProxy({ upstream: engine.url, auth: { signingKey: KEY } });
    });
    afterAll(() => proxy?.close());

    it("a second turn is spliced onto the first's ids, and the recorded request is the one sent", async () => {
      const s = await session(true);
      const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
      const first = [{ role: "user" as const, content: "Say something." }];
      const turn1 = await client.chat.completions.create({
        model: ENGINE_MODEL,
        max_tokens: MAX,
        temperature: 0,
        messages: first,
      });
      await client.chat.completions.create({
        model: ENGINE_MODEL,
        max_tokens: MAX,
        temperature: 0,
        messages: [...first, turn1.choices[0].message, { role: "user" as const, content: "And again." }],
      });
      const [c1, c2] = await expectEngineFaithful(proxy.store, s.id, 2);
      expect(c1.tito).toBe("fallback:no_prior_capture");
      expect(c1.upstream_request).toBeNull();
      expect(c2.tito).toBe("spliced");
      expect(c2.upstream_request?.token_channel).toBe("chat_kv_transfer");
      // Stored once: the body's id array is the capture's prompt ids, put back on reading.
      expect(c2.upstream_request?.body).not.toHaveProperty("kv_transfer_params.prompt_token_ids");
      expect(upstreamRequestOf(c2).body).toMatchObject({
        kv_transfer_params: { prompt_token_ids: c2.prompt_token_ids },
      });
      // The model continues from exactly what it sampled: parent prompt + parent answer come first.
      const parent = [...c1.prompt_token_ids!, ...c1.response_token_ids!];
      expect(c2.prompt_token_ids!.slice(0, parent.length)).toEqual(parent);
    });
  });
});

describe.skipIf(!engine.ok)("token-in-token-out on vLLM's native generate endpoint", () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    const titoCompletions = parseParserSpec("qwen3");
    if (typeof titoCompletions === "string") throw new Error(titoCompletions);
    proxy = await startProxy({ upstream: engine.url, auth: { signingKey: KEY }, titoCompletions });
  });
  afterAll(() => proxy?.close());

  it("is chosen by probing the engine, equals the engine's answer, and names each token's version", async () => {
    const s = await session(true);
    const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
    const first = [{ role: "user" as const, content: "Say something." }];
    const req = { model: ENGINE_MODEL, max_tokens: MAX, temperature: 0 };
    const turn1 = await client.chat.completions.create({ ...req, messages: first });
    const turn2 = await client.chat.completions.create({
      ...req,
      messages: [...first, turn1.choices[0].message, { role: "user" as const, content: "And again." }],
    });
    expect(turn2.choices[0].finish_reason).toBe("length");
    expect((turn2.choices[0].message as { reasoning?: string }).reasoning?.length).toBeGreaterThan(0);
    const [c1, c2] = await expectEngineFaithful(proxy.store, s.id, 2);
    expect(c1.upstream_request).toBeNull();
    expect(c2).toMatchObject({ tito: "spliced", upstream_request: { token_channel: "generate" } });
    const version = ((await (await fetch(`${engine.url}/weight_info`)).json()) as { weight_version: string })
      .weight_version;
    expect(c2).toMatchObject({
      policy_version: version,
      policy_version_end: version,
      policy_version_source: "engine",
    });
    expect(
      c2.prompt_token_ids!.slice(0, c1.prompt_token_ids!.length + c1.response_token_ids!.length),
    ).toEqual([...c1.prompt_token_ids!, ...c1.response_token_ids!]);
  });
});

/**
 * What vLLM 0.32 does on the chat token channel that the proxy relies on, checked on the wire so a
 * vLLM upgrade that changes it fails here (docs/tito.md "Engine support").
 */
describe.skipIf(!engine.ok)("vLLM's chat token channel (kv_transfer_params.prompt_token_ids)", () => {
  const THINK = 151667;
  const END_THINK = 151668;
  // <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nabc\n</think>\n\nfoo<|im_end|>\n
  // <|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n: an earlier turn's reasoning kept.
  const SPLICED = [
    151644,
    872,
    198,
    6023,
    151645,
    198,
    151644,
    77091,
    198,
    THINK,
    198,
    13683,
    198,
    END_THINK,
    271,
    7975,
    151645,
    198,
    151644,
    872,
    198,
    32771,
    151645,
    198,
    151644,
    77091,
    198,
  ];
  const body = (ids: number[], extra: Record<string, unknown> = {}) => ({
    model: ENGINE_MODEL,
    messages: [{ role: "user", content: "again" }],
    max_tokens: 6,
    temperature: 0,
    kv_transfer_params: { prompt_token_ids: ids },
    ...extra,
  });

  it("refuses a token prompt longer than the context itself (the proxy passes the 400 on)", async () => {
    const res = await fetch(`${engine.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body(new Array(32_769).fill(1000))),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("exceeds model's maximum context length (32768)");
  });

  it("keeps new reasoning in `reasoning`, streamed and not, after an earlier </think> in the prompt", async () => {
    const json = await engineAnswer(engine.url, "/v1/chat/completions", body(SPLICED));
    const message = (json.choices as { message: { content: string | null; reasoning: string | null } }[])[0]
      .message;
    expect(message.content).toBeNull();
    expect(message.reasoning?.length).toBeGreaterThan(0);
    const res = await fetch(`${engine.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body(SPLICED, { stream: true })),
    });
    const deltas = (await res.text())
      .split("\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)).choices[0]?.delta ?? {});
    expect(deltas.map((d) => d.reasoning ?? "").join("")).toBe(message.reasoning);
    expect(deltas.every((d) => !d.content)).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../../proxy-worker/chat/types.ts";
import { sglangEngine } from "../../proxy-worker/engines/sglang.ts";
import { vllmEngine } from "../../proxy-worker/engines/vllm.ts";

const chat: ChatRequest = {
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  stream_options: { include_usage: true },
};

function vllmAnswer() {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "m",
    prompt_token_ids: [1, 2, 3],
    prompt_logprobs: null,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "ok" },
        finish_reason: "stop",
        token_ids: [7, 8],
        logprobs: {
          content: [
            { token: "o", logprob: -0.5 },
            { token: "k", logprob: -0.25 },
          ],
        },
      },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  };
}

describe("vLLM adapter", () => {
  it("asks for ids and logprobs, never streams, and drops stream_options", () => {
    const body = vllmEngine.prepareRequest({ ...chat, stream: false });
    expect(body).toMatchObject({ return_token_ids: true, logprobs: true, top_logprobs: 0, stream: false });
    expect(body).not.toHaveProperty("stream_options");
    expect(vllmEngine.prepareRequest({ ...chat, logprobs: true, top_logprobs: 3 }).top_logprobs).toBe(3);
  });

  it("reads ids and logprobs and strips engine fields for the client", () => {
    const r = vllmEngine.readResponse(vllmAnswer(), false);
    expect(r.promptTokenIds).toEqual([1, 2, 3]);
    expect(r.responseTokenIds).toEqual([7, 8]);
    expect(r.responseLogprobs).toEqual([-0.5, -0.25]);
    expect(r.forClient).not.toHaveProperty("prompt_token_ids");
    expect(r.forClient.choices[0]).not.toHaveProperty("token_ids");
    expect(r.forClient.choices[0]).not.toHaveProperty("logprobs");
    expect(r.forCapture).not.toHaveProperty("prompt_token_ids");
    expect(r.policyVersion).toBeNull();
  });

  it("keeps logprobs for a client that asked for them", () => {
    const r = vllmEngine.readResponse(vllmAnswer(), true);
    expect(r.forClient.choices[0].logprobs?.content?.length).toBe(2);
  });

  it("gives null ids (not trainable) when the engine reports none, and null logprobs when misaligned", () => {
    const raw = vllmAnswer() as Record<string, unknown>;
    delete raw.prompt_token_ids;
    (raw.choices as Record<string, unknown>[])[0].token_ids = [7, 8, 9];
    const r = vllmEngine.readResponse(raw, false);
    expect(r.promptTokenIds).toBeNull();
    expect(r.responseTokenIds).toEqual([7, 8, 9]);
    expect(r.responseLogprobs).toBeNull();
    const bad = vllmAnswer() as Record<string, unknown>;
    bad.prompt_token_ids = [1, -2, 3.5];
    expect(vllmEngine.readResponse(bad, false).promptTokenIds).toBeNull();
  });
});

describe("SGLang adapter", () => {
  it("sends both the recent and the legacy id flags", () => {
    expect(sglangEngine.prepareRequest(chat)).toMatchObject({
      return_token_ids: true,
      return_prompt_token_ids: true,
      logprobs: true,
    });
  });

  it("reads per-choice ids (recent versions)", () => {
    const raw = vllmAnswer() as Record<string, unknown>;
    delete raw.prompt_token_ids;
    (raw.choices as Record<string, unknown>[])[0].prompt_token_ids = [4, 5];
    const r = sglangEngine.readResponse(raw, false);
    expect(r.promptTokenIds).toEqual([4, 5]);
    expect(r.responseTokenIds).toEqual([7, 8]);
    expect(r.forClient.choices[0]).not.toHaveProperty("prompt_token_ids");
  });

  it("reads legacy meta_info output logprobs and the weight version", () => {
    const raw = {
      id: "x",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "ok" },
          finish_reason: "stop",
          prompt_token_ids: [1, 2],
          meta_info: {
            output_token_logprobs: [
              [-0.1, 11, null],
              [-0.2, 12, null],
            ],
            weight_version: 42,
          },
        },
      ],
    };
    const r = sglangEngine.readResponse(raw, false);
    expect(r.responseTokenIds).toEqual([11, 12]);
    expect(r.responseLogprobs).toEqual([-0.1, -0.2]);
    expect(r.policyVersion).toBe("42");
    expect(r.forClient.choices[0]).not.toHaveProperty("meta_info");
  });
});

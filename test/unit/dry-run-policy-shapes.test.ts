import { describe, expect, it } from "vitest";
import { createPolicyApp } from "../../dry-run-policy/app.ts";
import type { PolicyShape } from "../../dry-run-policy/shapes.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";

/**
 * The dry-run policy in SGLang's layouts: each id field appears exactly where that release puts
 * it and only for the flag that asks for it, and the ids agree with the vLLM layout's.
 */
const qwen3 = loadQwen3();
const ALL_FLAGS = {
  logprobs: true,
  return_token_ids: true,
  return_prompt_token_ids: true,
  return_meta_info: true,
  return_input_ids_in_sglext: true,
  return_output_ids_in_sglext: true,
};
const MESSAGES = [{ role: "user", content: "Say hello." }];

interface Choice {
  prompt_token_ids?: number[];
  token_ids?: number[];
  response_token_ids?: number[];
  meta_info: { output_token_logprobs: unknown[][]; weight_version: string };
  message: Record<string, unknown>;
  logprobs: { content: { logprob: number }[] };
}
interface Answer {
  prompt_token_ids?: number[];
  choices: Choice[];
  sglext?: { output_ids: number[][] };
  metadata?: unknown;
}

async function ask(shape: PolicyShape, body: Record<string, unknown>) {
  const { app } = createPolicyApp({ shape, weightVersion: "w1" }, qwen3);
  const res = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: MESSAGES, ...body }),
  });
  return { status: res.status, body: (await res.json()) as Answer };
}

describe("dry-run policy SGLang shapes", async () => {
  const reference = (await ask("vllm", { logprobs: true, return_token_ids: true })).body;
  const prompt = reference.prompt_token_ids as number[];
  const out = reference.choices[0].token_ids as number[];
  const logprobs = reference.choices[0].logprobs.content.map((c: { logprob: number }) => c.logprob);

  it("sglang (newest): response_token_ids, meta_info, sglext ids (no version there), metadata", async () => {
    const { body } = await ask("sglang", ALL_FLAGS);
    const choice = body.choices[0];
    expect(choice.prompt_token_ids).toEqual(prompt);
    expect(choice.response_token_ids).toEqual(out);
    expect(choice).not.toHaveProperty("token_ids");
    expect(choice.meta_info.output_token_logprobs.map((r: unknown[]) => r[1])).toEqual(out);
    expect(choice.meta_info.output_token_logprobs.map((r: unknown[]) => r[0])).toEqual(logprobs);
    expect(choice.meta_info.weight_version).toBe("w1");
    expect(body.sglext).toEqual({ input_ids: prompt, output_ids: [out] });
    expect(body.metadata).toEqual({ weight_version: "w1" });
    expect(body).not.toHaveProperty("prompt_token_ids");
    expect(choice.message).toHaveProperty("reasoning_content");
    expect(choice.message).not.toHaveProperty("reasoning");
  });

  it("sglang-token-ids (PR #30917): per-choice token_ids, no sglext", async () => {
    const { body } = await ask("sglang-token-ids", ALL_FLAGS);
    expect(body.choices[0].token_ids).toEqual(out);
    expect(body.choices[0].prompt_token_ids).toEqual(prompt);
    expect(body.choices[0]).not.toHaveProperty("response_token_ids");
    expect(body).not.toHaveProperty("sglext");
  });

  it("sglang-meta-info (before #30917): sampled ids only inside meta_info", async () => {
    const { body } = await ask("sglang-meta-info", ALL_FLAGS);
    const choice = body.choices[0];
    expect(choice).not.toHaveProperty("token_ids");
    expect(choice).not.toHaveProperty("response_token_ids");
    expect(choice.prompt_token_ids).toEqual(prompt);
    expect(choice.meta_info.output_token_logprobs.map((r: unknown[]) => r[1])).toEqual(out);
    expect(body).not.toHaveProperty("sglext");
  });

  it("answers without any id field when no flag asks, as SGLang does", async () => {
    for (const shape of ["sglang", "sglang-token-ids", "sglang-meta-info"] as const) {
      const { body } = await ask(shape, {});
      for (const f of ["prompt_token_ids", "token_ids", "response_token_ids", "meta_info"]) {
        expect(body.choices[0], `${shape} ${f}`).not.toHaveProperty(f);
      }
      expect(body).not.toHaveProperty("sglext");
      expect(body.metadata).toEqual({ weight_version: "w1" });
    }
  });

  it("refuses per-choice ids on a streamed call and streams sglext ids once at the end", async () => {
    expect((await ask("sglang", { stream: true, return_token_ids: true })).status).toBe(400);
    const { app } = createPolicyApp({ shape: "sglang" }, qwen3);
    const res = await app.request("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ messages: MESSAGES, stream: true, return_output_ids_in_sglext: true }),
    });
    const chunks = (await res.text())
      .split("\n\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)));
    const withExt = chunks.filter((c) => c.sglext);
    expect(withExt).toHaveLength(1);
    expect(withExt[0].sglext.output_ids).toEqual([out]);
    expect(chunks.at(-1)).toBe(withExt[0]);
    expect(chunks.some((c) => c.prompt_token_ids || c.choices.some((ch: Choice) => ch.token_ids))).toBe(
      false,
    );
  });

  it("changes the reported weight version through /update_weight_version", async () => {
    const { app } = createPolicyApp({ shape: "sglang" }, qwen3);
    expect(await (await app.request("/get_weight_version")).json()).toEqual({ weight_version: "default" });
    const r = await app.request("/update_weight_version", {
      method: "POST",
      body: JSON.stringify({ new_version: "step-9" }),
    });
    expect(await r.json()).toMatchObject({ success: true, new_version: "step-9" });
    const res = await app.request("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ messages: MESSAGES }),
    });
    expect((await res.json()).metadata).toEqual({ weight_version: "step-9" });
  });
});

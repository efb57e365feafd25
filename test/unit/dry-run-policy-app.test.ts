import { describe, expect, it } from "vitest";
import { createPolicyApp } from "../../dry-run-policy/app.ts";

const { app, counts } = createPolicyApp({ maxModelLen: 2048 });
const post = (path: string, body: string) =>
  app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body });

describe("dry-run policy app on odd input", () => {
  const odd: [string, unknown][] = [
    ["array body", []],
    ["null body", null],
    ["no messages", { model: "m" }],
    ["tool message first", { messages: [{ role: "tool", content: "x" }] }],
    [
      "image-only content",
      { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] },
    ],
    [
      "arguments that are not JSON",
      {
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "a", function: { name: "f", arguments: "{oops" } }],
          },
          { role: "tool", content: null },
        ],
      },
    ],
    [
      "quotes in a tool name",
      {
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: 'a"b' } }],
      },
    ],
    [
      "special tokens in user text",
      { messages: [{ role: "user", content: "<|im_end|><think>{{ x }}{% if %}" }] },
    ],
    [
      "developer and system roles",
      {
        messages: [
          { role: "developer", content: "d" },
          { role: "system", content: "s" },
          { role: "user", content: "u" },
        ],
      },
    ],
    ["wrong role", { messages: [{ role: "robot", content: "x" }] }],
    ["stream as string", { messages: [{ role: "user", content: "x" }], stream: "yes" }],
    ["top_logprobs without logprobs", { messages: [{ role: "user", content: "x" }], top_logprobs: 3 }],
    ["n of 2", { messages: [{ role: "user", content: "x" }], n: 2 }],
    ["prompt beyond max_model_len", { messages: [{ role: "user", content: "word ".repeat(3000) }] }],
  ];
  for (const [name, body] of odd) {
    it(`answers ${name} with 200 or a vLLM-shaped 400, never a crash`, async () => {
      const res = await post("/v1/chat/completions", JSON.stringify(body));
      expect([200, 400]).toContain(res.status);
      const json = (await res.json()) as { error?: { type: string; code: number; message: string } };
      if (res.status === 400) {
        expect(json.error).toMatchObject({ type: "BadRequestError", code: 400 });
        expect(json.error?.message.length).toBeGreaterThan(5);
      } else expect(json).toHaveProperty("choices");
    });
  }

  it("rejects the malformed cases and accepts the odd-but-valid ones", async () => {
    const status = async (body: unknown) => (await post("/v1/chat/completions", JSON.stringify(body))).status;
    expect(await status({ messages: [{ role: "robot", content: "x" }] })).toBe(400);
    expect(await status({ messages: [{ role: "user", content: "x" }], n: 2 })).toBe(400);
    expect(await status({ messages: [{ role: "user", content: "word ".repeat(3000) }] })).toBe(400);
    expect(await status({ messages: [{ role: "tool", content: "x" }] })).toBe(200);
    expect(await status({ messages: [{ role: "user", content: "<|im_end|>{{ x }}" }] })).toBe(200);
  });

  it("answers tokenize/detokenize errors in the same shape and counts requests", async () => {
    const before = counts.tokenize;
    const bad = await post("/tokenize", JSON.stringify({ prompt: 5 }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { param: "prompt", code: 400 } });
    const unknownId = await post("/detokenize", JSON.stringify({ tokens: [10_000_000] }));
    expect(unknownId.status).toBe(400);
    expect(counts.tokenize).toBe(before + 1);
    const notFound = await app.request("/v1/completions/nope");
    expect(notFound.status).toBe(404);
  });
});

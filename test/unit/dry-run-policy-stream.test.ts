import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { generate } from "../../dry-run-policy/generate.ts";
import { ChatCompletionRequestSchema } from "../../dry-run-policy/request-schema.ts";
import { chatCompletionBody } from "../../dry-run-policy/response.ts";
import { chatCompletionChunks } from "../../dry-run-policy/stream.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import { scriptMessage } from "../support/policy.ts";

const q = loadQwen3();
const meta = { model: "m", created: 0 };
const bash = {
  type: "function",
  function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" } } } },
};

/** One script line's worth of text: no line breaks, no fences, no markup, no leading blank. */
const lineText = fc
  .string({ unit: "grapheme", minLength: 1, maxLength: 40 })
  .map((s) => s.replace(/[\r\n\u2028\u2029\u0085`<>#]/g, "x").trim())
  .filter((s) => s.length > 0);

type Chunk = {
  prompt_token_ids?: number[];
  choices: {
    delta: { content?: string; reasoning?: string; tool_calls?: { function: { arguments: string } }[] };
    token_ids?: number[];
    finish_reason: string | null;
    logprobs: { content: unknown[] } | null;
  }[];
};

function replay(body: Record<string, unknown>) {
  const request = ChatCompletionRequestSchema.parse({
    model: "m",
    tools: [bash],
    return_token_ids: true,
    ...body,
  });
  const gen = generate(q, request, 40960);
  const whole = chatCompletionBody(q, request, gen, meta);
  const chunks = chatCompletionChunks(q, request, gen, meta) as unknown as Chunk[];
  const choices = chunks.flatMap((c) => c.choices);
  return {
    whole,
    gen,
    chunks,
    ids: choices.flatMap((c) => c.token_ids ?? []),
    content: choices.map((c) => c.delta.content ?? "").join(""),
    reasoning: choices.map((c) => c.delta.reasoning ?? "").join(""),
    args: choices.flatMap((c) => c.delta.tool_calls ?? []).map((t) => t.function.arguments),
    finishes: choices.map((c) => c.finish_reason).filter(Boolean),
    logprobCount: choices.reduce((n, c) => n + (c.logprobs?.content.length ?? 0), 0),
  };
}

describe("streamed chunks vs the whole answer", () => {
  it("carry the same ids, reasoning and content for any scripted text, cut or not", () => {
    fc.assert(
      fc.property(
        fc.option(lineText, { nil: undefined }),
        lineText,
        fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
        (think, say, maxTokens) => {
          const steps = [...(think ? [`think: ${think}`] : []), `say: ${say}`];
          const r = replay({
            messages: [{ role: "user", content: scriptMessage(steps) }],
            max_tokens: maxTokens,
            logprobs: true,
          });
          const message = r.whole.choices[0].message;
          expect(r.ids).toEqual(r.gen.ids);
          expect(r.logprobCount).toBe(r.gen.ids.length);
          expect(r.content).toBe(message.content ?? "");
          expect(r.reasoning).toBe(message.reasoning ?? "");
          expect(r.finishes).toEqual([r.gen.finishReason]);
          if (r.gen.finishReason === "stop") {
            // The Qwen3 tokenizer normalizes to NFC, so that is the text a model can emit.
            expect(message.content).toBe(say.normalize("NFC"));
            expect(message.reasoning).toBe(think?.normalize("NFC") ?? null);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("send a tool call as one delta holding the whole arguments text", () => {
    const r = replay({ messages: [{ role: "user", content: scriptMessage(['shell: printf "%s\\n" "ü"']) }] });
    const call = r.whole.choices[0].message.tool_calls![0];
    expect(r.args).toEqual([call.function.arguments]);
    expect(JSON.parse(call.function.arguments)).toEqual({ command: 'printf "%s\\n" "ü"' });
    expect(r.chunks[0].prompt_token_ids).toEqual(r.gen.promptIds);
    expect(r.ids).toEqual(r.gen.ids);
  });
});

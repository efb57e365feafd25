/**
 * Renders only the appended messages to token ids, with the engine's own template and tokenizer
 * (`renderers.ts`: vLLM's `/tokenize` with messages, SGLang's chat prompt ids), so the proxy
 * carries no tokenizer. The delta is rendered after
 * a stand-in first turn twice, with two different assistant answers; the two renders agree from
 * the end of that answer on, and that common tail is the template's closing of the assistant
 * turn followed by the delta and the generation prompt (docs/tito.md, "How the delta is rendered").
 * What a template family does differently at a turn's end is in families.ts.
 */
import type { ChatMessage, ChatTool } from "../chat/types.ts";
import { closesAlike, type Family } from "./families.ts";
import type { PromptRenderer } from "./renderers.ts";
import type { FallbackReason } from "./session-lookup.ts";

export interface DeltaInput {
  model: string;
  tools?: ChatTool[];
  chatTemplateKwargs?: Record<string, unknown>;
  delta: ChatMessage[];
  /** The assistant turn right before the delta, as the harness sent it back. */
  answered?: ChatMessage;
  /** The parent's sampled ids and why they ended. */
  sampled: readonly number[];
  finishReason: string | null;
}

export interface DeltaRenderers {
  /** The template's render (`/tokenize`), the engine's usual source. */
  template: PromptRenderer;
  /** What the engine's chat endpoint itself builds (families whose engine does not use a template). */
  engineChat: PromptRenderer;
  /** The engine's template family, looked up only when the template's render falls short. */
  family: () => Promise<Family | null>;
}

export type Rendered = { ok: true; ids: number[] } | { ok: false; reason: FallbackReason; detail: string };

// Two answers whose tokens differ in their last token, so the common tail starts right after them.
const STAND_IN_ANSWERS = ["a", "b"] as const;
const STAND_IN_QUERY = "polar";

export async function renderDelta(r: DeltaRenderers, input: DeltaInput): Promise<Rendered> {
  let renders = await renderPair(r.template, input, plainStandIns);
  if (typeof renders === "string") {
    const family = await r.family();
    // Only a family whose engine renders chats itself is worth a second render; otherwise the
    // engine cannot render these messages at all.
    if (!family?.harmony) return { ok: false, reason: "render_failed", detail: renders };
    if (input.delta.some((m) => m.role === "tool") && !input.answered?.tool_calls?.length) {
      return {
        ok: false,
        reason: "tool_result_without_call",
        detail:
          "a tool result follows an assistant turn without tool calls; harmony names a tool result after its call",
      };
    }
    renders = await renderPair(r.engineChat, input, harmonyStandIns);
    if (typeof renders === "string") return { ok: false, reason: "render_failed", detail: renders };
  }
  const tail = commonTail(renders[0], renders[1]);
  if (tail.length === 0) return { ok: false, reason: "render_mismatch", detail: "the renders share no tail" };
  // The sampled turn ended with the end-of-turn token: the tail's first token is that same token,
  // or one the family writes in its place. The sampled one stays, the rendered one is left out.
  const ended = input.finishReason === "stop" || input.finishReason === "tool_calls";
  if (!ended) return { ok: true, ids: tail };
  const last = input.sampled[input.sampled.length - 1];
  if (last !== tail[0] && !closesAlike(await r.family(), last, tail[0])) {
    return {
      ok: false,
      reason: "closing_token_mismatch",
      detail: `the sampled turn ends with id ${last}, the template closes it with ${tail[0]}`,
    };
  }
  return { ok: true, ids: tail.slice(1) };
}

type StandIn = (answer: string, input: DeltaInput) => ChatMessage;

const plainStandIns: StandIn = (answer) => ({ role: "assistant", content: answer });

/**
 * Harmony names a tool result after the call it answers (vLLM maps `tool_call_id` to the name), so
 * before a tool result the stand-in makes the same calls, with arguments that differ in their last
 * token: the tail then starts at the call's closing token.
 */
const harmonyStandIns: StandIn = (answer, input) => {
  const calls = input.answered?.tool_calls ?? [];
  if (!input.delta.some((m) => m.role === "tool") || calls.length === 0) return plainStandIns(answer, input);
  return {
    role: "assistant",
    content: null,
    tool_calls: calls.map((c) => ({ ...c, function: { name: c.function.name, arguments: answer } })),
  };
};

async function renderPair(
  render: PromptRenderer,
  input: DeltaInput,
  standIn: StandIn,
): Promise<[number[], number[]] | string> {
  const renders = await Promise.all(
    STAND_IN_ANSWERS.map((answer) =>
      render({
        model: input.model,
        messages: [{ role: "user", content: STAND_IN_QUERY }, standIn(answer, input), ...input.delta],
        tools: input.tools,
        chatTemplateKwargs: input.chatTemplateKwargs,
      }),
    ),
  );
  const [a, b] = renders;
  if (typeof a === "string") return a;
  if (typeof b === "string") return b;
  return [a, b];
}

/** The longest common suffix of two id lists. */
function commonTail(a: readonly number[], b: readonly number[]): number[] {
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  return a.slice(a.length - n);
}

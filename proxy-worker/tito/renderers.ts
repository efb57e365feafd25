/**
 * How each engine renders a conversation to prompt ids for the delta render (docs/tito.md):
 * `POST /tokenize` with messages, tools and template kwargs (vLLM; SGLang 0.5.23's
 * `serving_tokenize.py` renders them too). An SGLang release whose `/tokenize` takes text only
 * renders through a one-token chat call whose answer reports its prompt ids instead.
 * `engineChatRenderer` renders as the engine's chat endpoint itself would (for GPT-OSS, vLLM's
 * harmony renderer rather than a template; families.ts).
 */
import type { ChatMessage, ChatTool } from "../chat/types.ts";
import type { Gateway } from "../deps.ts";
import { isTokenIdArray } from "../engines/engine.ts";
import { postJson } from "../upstream.ts";

export interface RenderInput {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  chatTemplateKwargs?: Record<string, unknown>;
}

/** Prompt ids with the generation prompt, or why not (a string). */
export type PromptRenderer = (input: RenderInput) => Promise<number[] | string>;

export function rendererFor(g: Gateway): PromptRenderer {
  if (g.engine.name !== "sglang") return (input) => viaTokenize(g, input);
  return async (input) => {
    const ids = await viaTokenize(g, input);
    return typeof ids === "string" ? viaChat(g, input) : ids;
  };
}

/**
 * The prompt the engine's own chat path builds: vLLM's `/v1/chat/completions/render` (served with
 * `--enable-scale-out`), else a one-token chat call whose answer reports its prompt ids.
 */
export function engineChatRenderer(g: Gateway): PromptRenderer {
  return async (input) => {
    const ids = await viaChatRender(g, input);
    return typeof ids === "string" ? viaChat(g, input) : ids;
  };
}

async function viaChatRender(g: Gateway, input: RenderInput): Promise<number[] | string> {
  const res = await postJson(g.upstream, "/v1/chat/completions/render", {
    model: input.model,
    messages: input.messages,
    ...(input.tools && input.tools.length > 0 ? { tools: input.tools } : {}),
    ...(input.chatTemplateKwargs ? { chat_template_kwargs: input.chatTemplateKwargs } : {}),
  });
  if (!res.ok) return res.message;
  return isTokenIdArray(res.body.token_ids)
    ? res.body.token_ids
    : "the engine's render answer has no token_ids[]";
}

async function viaTokenize(g: Gateway, input: RenderInput): Promise<number[] | string> {
  const res = await postJson(g.upstream, "/tokenize", {
    model: input.model,
    messages: input.messages,
    ...(input.tools && input.tools.length > 0 ? { tools: input.tools } : {}),
    add_generation_prompt: true,
    ...(input.chatTemplateKwargs ? { chat_template_kwargs: input.chatTemplateKwargs } : {}),
  });
  if (!res.ok) return res.message;
  return isTokenIdArray(res.body.tokens) ? res.body.tokens : "the engine's /tokenize answer has no tokens[]";
}

async function viaChat(g: Gateway, input: RenderInput): Promise<number[] | string> {
  const body = g.engine.prepareRequest({
    model: input.model,
    messages: input.messages,
    ...(input.tools && input.tools.length > 0 ? { tools: input.tools } : {}),
    ...(input.chatTemplateKwargs ? { chat_template_kwargs: input.chatTemplateKwargs } : {}),
    max_tokens: 1,
  });
  const res = await postJson(g.upstream, "/v1/chat/completions", body);
  if (!res.ok) return res.message;
  if (!Array.isArray(res.body.choices) || res.body.choices.length === 0)
    return "the render call has no choices";
  const ids = g.engine.readResponse(res.body, false).promptTokenIds;
  return ids ?? "the engine reported no prompt ids for the render call";
}

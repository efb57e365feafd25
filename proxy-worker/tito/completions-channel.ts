/**
 * vLLM `/v1/completions` with a token-id prompt, for vLLM releases whose chat endpoint has no
 * token channel (docs/tito.md); the answer is parsed by the proxy (parsed-answer.ts).
 */
import type { ChatRequest } from "../chat/types.ts";
import { isObject, isTokenIdArray } from "../engines/engine.ts";
import type { UpstreamResult } from "../upstream.ts";
import { OUTPUT_PARSERS, type OutputParser } from "./output-parsers.ts";
import { parsedChatCompletion, samplingOf } from "./parsed-answer.ts";

export interface CompletionsChannel {
  /** Model name -> parser; `*` applies to any other model. */
  parsers: Record<string, OutputParser>;
}

export function parserFor(channel: CompletionsChannel, model: string): OutputParser | null {
  return channel.parsers[model] ?? channel.parsers["*"] ?? null;
}

/** The `/v1/completions` body for a token prompt, with the chat request's sampling. */
export function completionsRequest(chat: ChatRequest, ids: number[]): Record<string, unknown> {
  const body: Record<string, unknown> = {
    prompt: ids,
    return_token_ids: true,
    n: 1,
    ...(chat.model !== undefined ? { model: chat.model } : {}),
    ...samplingOf(chat),
  };
  const top = typeof chat.top_logprobs === "number" ? chat.top_logprobs : 0;
  body.logprobs = Math.max(1, top);
  return body;
}

/** The completions answer as the chat completion vLLM's parsers would have made of it. */
export function chatFromCompletion(
  res: UpstreamResult,
  parser: OutputParser,
  thinking: boolean,
): UpstreamResult {
  if (!res.ok) return res;
  const choice = Array.isArray(res.body.choices) ? res.body.choices[0] : undefined;
  if (!isObject(choice) || typeof choice.text !== "string") {
    return { ok: false, status: 502, message: "upstream /v1/completions answer has no choices[0].text" };
  }
  return parsedChatCompletion(
    {
      status: res.status,
      id: typeof res.body.id === "string" ? res.body.id : "cmpl",
      created: res.body.created,
      model: res.body.model,
      text: choice.text,
      finishReason: choice.finish_reason,
      stopReason: choice.stop_reason,
      logprobs: chatLogprobs(choice.logprobs),
      usage: res.body.usage,
      choiceExtras: isTokenIdArray(choice.token_ids) ? { token_ids: choice.token_ids } : {},
      rootExtras: isTokenIdArray(choice.prompt_token_ids)
        ? { prompt_token_ids: choice.prompt_token_ids }
        : {},
    },
    parser,
    thinking,
  );
}

/** Completions logprobs (`tokens`, `token_logprobs`) in chat's `content[]` shape. */
function chatLogprobs(lp: unknown): { content: { token: string; logprob: number }[] } | null {
  if (!isObject(lp) || !Array.isArray(lp.token_logprobs) || !Array.isArray(lp.tokens)) return null;
  const tokens = lp.tokens;
  return {
    content: lp.token_logprobs.map((logprob, i) => ({
      token: typeof tokens[i] === "string" ? tokens[i] : "",
      logprob: typeof logprob === "number" ? logprob : Number.NaN,
    })),
  };
}

/** `qwen3` (every model) or `policy=qwen3,other=hermes`; a string is the problem with the spec. */
export function parseParserSpec(spec: string): CompletionsChannel | string {
  const parsers: Record<string, OutputParser> = {};
  for (const part of spec.split(",")) {
    const eq = part.lastIndexOf("=");
    const model = eq < 0 ? "*" : part.slice(0, eq).trim();
    const name = (eq < 0 ? part : part.slice(eq + 1)).trim();
    if (!(OUTPUT_PARSERS as readonly string[]).includes(name) || model === "") {
      return `expected PARSER or MODEL=PARSER[,...] with PARSER one of ${OUTPUT_PARSERS.join(", ")}, got ${JSON.stringify(part)}`;
    }
    parsers[model] = name as OutputParser;
  }
  return { parsers };
}

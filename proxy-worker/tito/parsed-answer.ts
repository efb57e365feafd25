/**
 * A token channel's raw text answer as the chat completion vLLM's parsers would have made of it
 * (`/v1/completions` and `/inference/v1/generate`): reasoning and tool calls parsed by the proxy's
 * parser for the model, in vLLM's chat shape, so everything after reads it as from chat.
 */
import type { ChatRequest } from "../chat/types.ts";
import type { UpstreamResult } from "../upstream.ts";
import { type OutputParser, parseOutput } from "./output-parsers.ts";

/**
 * The sampling a chat request carries over to a token channel (vLLM's `SamplingParams` fields, on
 * `/v1/completions` at the root, on generate in `sampling_params`), `max_completion_tokens` as
 * `max_tokens` when only it is set.
 */
const SAMPLING_FIELDS = [
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "stop",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
] as const;

export function samplingOf(chat: ChatRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of SAMPLING_FIELDS) if (chat[f] !== undefined) out[f] = chat[f];
  if (chat.max_completion_tokens !== undefined && out.max_tokens === undefined)
    out.max_tokens = chat.max_completion_tokens;
  return out;
}

export interface RawAnswer {
  status: number;
  id: string;
  created: unknown;
  model: unknown;
  text: string;
  finishReason: unknown;
  stopReason: unknown;
  logprobs: { content: { token: string; logprob: number }[] } | null;
  usage: unknown;
  /** Choice fields kept as they are (the sampled `token_ids`, version spans). */
  choiceExtras: Record<string, unknown>;
  /** Root fields kept as they are (`prompt_token_ids`). */
  rootExtras: Record<string, unknown>;
}

export function parsedChatCompletion(
  raw: RawAnswer,
  parser: OutputParser,
  thinking: boolean,
): UpstreamResult {
  let n = 0;
  const parsed = parseOutput(parser, raw.text, () => `chatcmpl-tool-${raw.id}-${n++}`, thinking);
  const finish = parsed.toolCalls.length > 0 && raw.finishReason === "stop" ? "tool_calls" : raw.finishReason;
  return {
    ok: true,
    status: raw.status,
    body: {
      id: raw.id,
      object: "chat.completion",
      created: raw.created,
      model: raw.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: parsed.content,
            reasoning: parsed.reasoning,
            tool_calls: parsed.toolCalls,
          },
          logprobs: raw.logprobs,
          finish_reason: finish,
          stop_reason: raw.stopReason ?? null,
          ...raw.choiceExtras,
        },
      ],
      usage: raw.usage,
      ...raw.rootExtras,
    },
  };
}

/**
 * Puts a spliced prompt on the channel each engine reads token prompts from (docs/tito.md,
 * "Engine support"). Added after the guard that strips client-sent engine fields, so only the
 * proxy's own ids go upstream.
 */
import type { EngineName } from "../../shared/engines.ts";
import { TOKEN_CHANNELS, type TokenChannel } from "../../shared/upstream-request.ts";
import type { ChatRequest } from "../chat/types.ts";
import type { Gateway } from "../deps.ts";
import type { UpstreamResult } from "../upstream.ts";
import { chatFromCompletion, completionsRequest, parserFor } from "./completions-channel.ts";

/** One upstream call: where to post what, and how to read the answer as a chat completion. */
export interface TokenPromptCall {
  channel: TokenChannel;
  path: string;
  body: Record<string, unknown>;
  finish(result: UpstreamResult): UpstreamResult;
}

/** vLLM `/v1/completions` when configured for the model, else the engine's chat channel. */
export function tokenPromptCall(g: Gateway, chat: ChatRequest, ids: number[]): TokenPromptCall {
  const parser =
    g.engine.name === "vllm" && g.tito.completions ? parserFor(g.tito.completions, chat.model) : null;
  if (parser) {
    return {
      channel: "completions",
      path: TOKEN_CHANNELS.completions.path,
      body: completionsRequest(chat, ids),
      finish: (result) => chatFromCompletion(result, parser),
    };
  }
  const channel = g.engine.name === "sglang" ? "chat_input_ids" : "chat_kv_transfer";
  return {
    channel,
    path: TOKEN_CHANNELS[channel].path,
    body: withTokenPrompt(g.engine.name, chat, ids) as Record<string, unknown>,
    finish: (r) => r,
  };
}

export function withTokenPrompt(engine: EngineName, chat: ChatRequest, ids: number[]): ChatRequest {
  // SGLang chat: `input_ids` skips templating; messages still drive stop tokens and tool parsing.
  if (engine === "sglang") return { ...chat, input_ids: ids };
  // vLLM chat (PR #48145): skips templating, reasoning and tool parsers still run.
  return { ...chat, kv_transfer_params: { prompt_token_ids: ids } };
}

/**
 * Puts a spliced prompt on the channel each engine reads token prompts from (docs/tito.md,
 * "Engine support"). Added after the guard that strips client-sent engine fields, so only the
 * proxy's own ids go upstream.
 */
import type { EngineName } from "../../shared/engines.ts";
import { TOKEN_CHANNELS, type TokenChannel } from "../../shared/token-channels.ts";
import type { ChatRequest } from "../chat/types.ts";
import type { Gateway } from "../deps.ts";
import type { UpstreamResult } from "../upstream.ts";
import { chatFromCompletion, completionsRequest, parserFor } from "./completions-channel.ts";
import { chatFromGenerate, GENERATE_PATH, generateRequest, probeGenerate } from "./generate-channel.ts";

/** One upstream call: where to post what, and how to read the answer as a chat completion. */
export interface TokenPromptCall {
  channel: TokenChannel;
  path: string;
  body: Record<string, unknown>;
  finish(result: UpstreamResult): UpstreamResult;
}

/**
 * With a proxy-side parser configured for the model (vLLM only): the native generate endpoint when
 * the engine serves it (it also reports per-token versions), else `/v1/completions`. Without one,
 * the engine's chat channel, whose own parsers run.
 */
export async function tokenPromptCall(
  g: Gateway,
  chat: ChatRequest,
  ids: number[],
): Promise<TokenPromptCall> {
  const parser =
    g.engine.name === "vllm" && g.tito.completions ? parserFor(g.tito.completions, chat.model) : null;
  if (parser && (await generateServed(g))) {
    return {
      channel: "generate",
      path: GENERATE_PATH,
      body: generateRequest(chat, ids),
      finish: (result) => chatFromGenerate(result, ids, parser, thinkingOn(chat)),
    };
  }
  if (parser) {
    return {
      channel: "completions",
      path: TOKEN_CHANNELS.completions.path,
      body: completionsRequest(chat, ids),
      finish: (result) => chatFromCompletion(result, parser, thinkingOn(chat)),
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

/** The template's thinking switch as the request sets it (Qwen3's default: on). */
function thinkingOn(chat: ChatRequest): boolean {
  const kwargs = chat.chat_template_kwargs as { enable_thinking?: unknown } | undefined;
  return kwargs?.enable_thinking !== false;
}

/** Probed once per proxy (on the first upstream: every replica runs the same engine build). */
function generateServed(g: Gateway): Promise<boolean> {
  g.tito.generateProbe ??= probeGenerate(g.upstream).then((served) => {
    g.log(
      `token prompts: vLLM ${served ? "serves" : "does not serve"} ${GENERATE_PATH}; using ${served ? "it" : "/v1/completions"}`,
    );
    return served;
  });
  return g.tito.generateProbe;
}

export function withTokenPrompt(engine: EngineName, chat: ChatRequest, ids: number[]): ChatRequest {
  // SGLang chat: `input_ids` skips templating; messages still drive stop tokens and tool parsing.
  if (engine === "sglang") return { ...chat, input_ids: ids };
  // vLLM chat (PR #48145): skips templating, reasoning and tool parsers still run.
  return { ...chat, kv_transfer_params: { prompt_token_ids: ids } };
}

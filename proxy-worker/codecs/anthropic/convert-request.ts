import type { ChatMessage, ChatRequest } from "../../chat/types.ts";
import { CodecError, type DecodedRequest, type RequestContext } from "../codec.ts";
import { clampMaxTokens, estimatePromptTokens } from "../common/max-tokens.ts";
import { pairToolResults } from "../common/pair-tool-results.ts";
import { mapReasoningEffort } from "../common/reasoning-effort.ts";
import { describeZodError } from "../common/zod-issue.ts";
import { convertMessages } from "./convert-messages.ts";
import { convertToolChoice, convertTools } from "./convert-tools.ts";
import { AnthropicRequest } from "./request-schema.ts";
import { collectSystemPrompt } from "./system-prompt.ts";

/** Validates the body; a bad one is a 400 naming the field. */
export function parseAnthropicRequest(body: unknown): AnthropicRequest {
  const parsed = AnthropicRequest.safeParse(body);
  if (!parsed.success) {
    const { message, param } = describeZodError(parsed.error);
    throw new CodecError(400, message, param);
  }
  return parsed.data;
}

/** The prompt part of the chat request (also what count_tokens tokenizes). */
export function buildChatPrompt(request: AnthropicRequest): Pick<ChatRequest, "messages" | "tools"> {
  const messages: ChatMessage[] = [];
  const system = collectSystemPrompt(request);
  if (system !== undefined) messages.push({ role: "system", content: system });
  messages.push(...convertMessages(request.messages));
  const tools = convertTools(request.tools);
  return { messages: pairToolResults(messages), ...(tools.length > 0 ? { tools } : {}) };
}

/** `thinking` and `output_config.effort` become the engine's template switch and effort level. */
function thinkingOptions(
  request: AnthropicRequest,
): Pick<ChatRequest, "chat_template_kwargs" | "reasoning_effort"> {
  const out: Pick<ChatRequest, "chat_template_kwargs" | "reasoning_effort"> = {};
  if (request.thinking) out.chat_template_kwargs = { enable_thinking: request.thinking.type !== "disabled" };
  const effort = mapReasoningEffort(request.output_config?.effort);
  if (effort && request.thinking?.type !== "disabled") out.reasoning_effort = effort;
  return out;
}

function responseFormat(request: AnthropicRequest): Record<string, unknown> | undefined {
  const format = request.output_config?.format ?? request.output_format;
  if (!format?.schema) return undefined;
  return { type: "json_schema", json_schema: { name: "output", schema: format.schema } };
}

export function decodeAnthropicRequest(body: unknown, ctx: RequestContext): DecodedRequest {
  const request = parseAnthropicRequest(body);
  const { messages, tools } = buildChatPrompt(request);
  const chat: ChatRequest = { model: request.model, messages };
  if (tools) {
    chat.tools = tools;
    const toolChoice = convertToolChoice(request.tool_choice, tools);
    if (toolChoice !== undefined) chat.tool_choice = toolChoice;
    if (request.tool_choice?.disable_parallel_tool_use) chat.parallel_tool_calls = false;
  }
  const maxTokens = clampMaxTokens(
    request.max_tokens,
    ctx.maxModelLen,
    estimatePromptTokens(messages, tools),
  );
  if (maxTokens !== undefined) chat.max_tokens = maxTokens;
  if (request.temperature !== undefined) chat.temperature = request.temperature;
  if (request.top_p !== undefined) chat.top_p = request.top_p;
  if (request.top_k !== undefined) chat.top_k = request.top_k;
  if (request.stop_sequences?.length) chat.stop = request.stop_sequences;
  if (request.metadata?.user_id) chat.user = request.metadata.user_id;
  Object.assign(chat, thinkingOptions(request));
  const format = responseFormat(request);
  if (format) chat.response_format = format;
  return { chat, stream: request.stream === true, model: request.model };
}

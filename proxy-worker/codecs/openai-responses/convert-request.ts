import type { ChatMessage, ChatRequest } from "../../chat/types.ts";
import { CodecError } from "../codec.ts";
import { clampMaxTokens, estimatePromptTokens } from "../common/max-tokens.ts";
import { mapReasoningEffort } from "../common/reasoning-effort.ts";
import { convertInput } from "./convert-input.ts";
import { convertToolChoice, convertTools } from "./convert-tools.ts";
import type { NamespacedTool } from "./namespace-tools.ts";
import type { ResponsesRequestBody } from "./request-schema.ts";

/** What the Responses codec must remember to turn the chat answer back into Responses items. */
export interface ResponsesCodecState {
  customTools: string[];
  localShell: boolean;
  namespaced: NamespacedTool[];
}

/**
 * Fields that need server-side state. A stateless proxy cannot honour them, and silently ignoring
 * them would send the model a conversation without its history.
 */
function refuseStatefulFeatures(body: ResponsesRequestBody): void {
  if (body.previous_response_id) {
    throw new CodecError(
      400,
      "previous_response_id is not supported: this proxy is stateless and stores no responses. Send the whole conversation in `input` with store:false (Codex does this by default).",
      "previous_response_id",
    );
  }
  if (body.conversation !== undefined && body.conversation !== null) {
    throw new CodecError(
      400,
      "conversation is not supported: this proxy stores no conversations; send the history in `input`.",
      "conversation",
    );
  }
  if (body.background === true) {
    throw new CodecError(
      400,
      "background responses are not supported by this proxy; omit `background`.",
      "background",
    );
  }
  if (body.prompt !== undefined && body.prompt !== null) {
    throw new CodecError(
      400,
      "stored prompt templates (`prompt`) are not supported; send `instructions` and `input`.",
      "prompt",
    );
  }
}

/**
 * `reasoning.effort` -> the engine's knobs: `reasoning_effort` for models that grade effort
 * (gpt-oss), `chat_template_kwargs.enable_thinking` for hybrid-thinking templates (Qwen3).
 */
function applyReasoningEffort(chat: ChatRequest, effort: string | null | undefined): void {
  if (!effort) return;
  if (effort === "none" || effort === "minimal") {
    chat.chat_template_kwargs = { ...chat.chat_template_kwargs, enable_thinking: false };
    if (effort === "minimal") chat.reasoning_effort = "low";
    return;
  }
  const level = mapReasoningEffort(effort);
  if (level) chat.reasoning_effort = level;
  chat.chat_template_kwargs = { ...chat.chat_template_kwargs, enable_thinking: true };
}

/** `text.format` -> `response_format` (Codex's `--output-schema` arrives as json_schema). */
function convertTextFormat(
  format: Record<string, unknown> | null | undefined,
): Record<string, unknown> | undefined {
  if (!format) return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type !== "json_schema") return undefined;
  const { type: _type, ...schema } = format;
  return { type: "json_schema", json_schema: { name: schema.name ?? "response", ...schema } };
}

/**
 * Codex sends its instructions as `instructions` and/or several leading developer items. Many chat
 * templates (Llama, Gemma, Mistral) accept a system message only at index 0, so the leading run of
 * text-only system messages becomes one, joined by a blank line. Later system messages stay put.
 */
function mergeLeadingSystem(messages: ChatMessage[]): ChatMessage[] {
  let end = 0;
  while (
    end < messages.length &&
    messages[end].role === "system" &&
    typeof messages[end].content === "string"
  )
    end++;
  if (end < 2) return messages;
  const content = messages
    .slice(0, end)
    .map((m) => m.content as string)
    .join("\n\n");
  return [{ role: "system", content }, ...messages.slice(end)];
}

export function convertResponsesRequest(
  body: ResponsesRequestBody,
  maxModelLen: number | undefined,
): { chat: ChatRequest; state: ResponsesCodecState } {
  refuseStatefulFeatures(body);
  const converted: ChatMessage[] = [];
  if (body.instructions) converted.push({ role: "system", content: body.instructions });
  converted.push(...convertInput(body.input));
  const messages = mergeLeadingSystem(converted);
  if (messages.length === 0)
    throw new CodecError(400, "input is empty: give `input` or `instructions`.", "input");

  const { tools, customTools, localShell, namespaced } = convertTools(body.tools);
  const chat: ChatRequest = { model: body.model, messages, stream: false };
  if (tools.length > 0) {
    chat.tools = tools;
    const choice = convertToolChoice(body.tool_choice);
    if (choice !== undefined) chat.tool_choice = choice;
    if (typeof body.parallel_tool_calls === "boolean") chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  const maxTokens = clampMaxTokens(
    body.max_output_tokens ?? undefined,
    maxModelLen,
    estimatePromptTokens(messages, chat.tools),
  );
  if (maxTokens !== undefined) chat.max_tokens = maxTokens;
  if (typeof body.temperature === "number") chat.temperature = body.temperature;
  if (typeof body.top_p === "number") chat.top_p = body.top_p;
  const user = body.safety_identifier ?? body.user;
  if (user) chat.user = user;
  applyReasoningEffort(chat, body.reasoning?.effort);
  const responseFormat = convertTextFormat(body.text?.format);
  if (responseFormat) chat.response_format = responseFormat;
  return { chat, state: { customTools, localShell, namespaced } };
}

import type { ChatMessage, ChatRequest } from "../../chat/types.ts";
import { CodecError, type DecodedRequest, type RequestContext } from "../codec.ts";
import { clampMaxTokens, estimatePromptTokens } from "../common/max-tokens.ts";
import { pairToolResults } from "../common/pair-tool-results.ts";
import { mapReasoningEffort } from "../common/reasoning-effort.ts";
import { describeZodError } from "../common/zod-issue.ts";
import { convertContents } from "./convert-contents.ts";
import { convertToolChoice, convertTools } from "./convert-tools.ts";
import { toJsonSchema } from "./json-schema.ts";
import { type GoogleGenerationConfig, GoogleRequest } from "./request-schema.ts";

/** What the encoder needs to know about the request. */
export interface GoogleState {
  /**
   * Thought parts are returned only when asked (`includeThoughts: true`), as Gemini does: Gemini CLI's
   * JSON routing call does not ask, and a thought part there would be read as part of the JSON.
   */
  includeThoughts: boolean;
  [key: string]: unknown;
}

function systemText(system: GoogleRequest["systemInstruction"]): string | undefined {
  if (system === undefined) return undefined;
  const text =
    typeof system === "string"
      ? system
      : system.parts
          .map((part) => part.text ?? "")
          .filter((t) => t.length > 0)
          .join("\n");
  return text.trim().length > 0 ? text : undefined;
}

/**
 * responseMimeType `application/json` with a schema -> json_schema; without one -> json_object.
 * Gemini CLI's routing call depends on getting parseable JSON back.
 */
function responseFormat(config: GoogleGenerationConfig | undefined): Record<string, unknown> | undefined {
  if (config?.responseMimeType !== "application/json") return undefined;
  const schema = config.responseJsonSchema ?? config.responseSchema;
  if (!schema) return { type: "json_object" };
  return { type: "json_schema", json_schema: { name: "response", schema: toJsonSchema(schema) } };
}

/**
 * thinkingBudget 0 turns thinking off, any other budget (-1 = dynamic) on; thinkingLevel
 * (Gemini 3: MINIMAL/LOW/MEDIUM/HIGH) becomes reasoning_effort.
 */
function thinkingOptions(config: GoogleGenerationConfig | undefined): Partial<ChatRequest> {
  const thinking = config?.thinkingConfig;
  if (!thinking) return {};
  const out: Partial<ChatRequest> = {};
  if (thinking.thinkingBudget !== undefined)
    out.chat_template_kwargs = { enable_thinking: thinking.thinkingBudget !== 0 };
  const effort = mapReasoningEffort(thinking.thinkingLevel);
  if (effort && thinking.thinkingBudget !== 0) out.reasoning_effort = effort;
  return out;
}

function samplingOptions(config: GoogleGenerationConfig | undefined): Partial<ChatRequest> {
  if (!config) return {};
  const out: Partial<ChatRequest> = {};
  if (config.temperature !== undefined) out.temperature = config.temperature;
  if (config.topP !== undefined) out.top_p = config.topP;
  if (config.topK !== undefined) out.top_k = config.topK;
  if (config.stopSequences?.length) out.stop = config.stopSequences;
  if (config.candidateCount !== undefined && config.candidateCount > 1) out.n = config.candidateCount;
  if (config.seed !== undefined) out.seed = config.seed;
  if (config.presencePenalty !== undefined) out.presence_penalty = config.presencePenalty;
  if (config.frequencyPenalty !== undefined) out.frequency_penalty = config.frequencyPenalty;
  return out;
}

export function decodeGoogleRequest(body: unknown, ctx: RequestContext): DecodedRequest {
  const parsed = GoogleRequest.safeParse(body);
  if (!parsed.success) {
    const { message, param } = describeZodError(parsed.error);
    throw new CodecError(400, message, param);
  }
  const request = parsed.data;
  // The model lives in the path (`/v1beta/models/{model}:generateContent`); a body `model` is a fallback.
  const model = ctx.pathModel ?? request.model?.replace(/^models\//, "");
  if (!model)
    throw new CodecError(
      400,
      "model: expected it in the path, /v1beta/models/{model}:generateContent",
      "model",
    );

  const messages: ChatMessage[] = [];
  const system = systemText(request.systemInstruction);
  if (system !== undefined) messages.push({ role: "system", content: system });
  messages.push(...convertContents(request.contents));
  const paired = pairToolResults(messages);

  const chat: ChatRequest = { model, messages: paired };
  const tools = convertTools(request.tools);
  if (tools.length > 0) {
    chat.tools = tools;
    const toolChoice = convertToolChoice(request.toolConfig, tools);
    if (toolChoice !== undefined) chat.tool_choice = toolChoice;
  }
  const config = request.generationConfig;
  const maxTokens = clampMaxTokens(
    config?.maxOutputTokens,
    ctx.maxModelLen,
    estimatePromptTokens(paired, tools.length > 0 ? tools : undefined),
  );
  if (maxTokens !== undefined) chat.max_tokens = maxTokens;
  Object.assign(chat, samplingOptions(config), thinkingOptions(config));
  const format = responseFormat(config);
  if (format) chat.response_format = format;

  const state: GoogleState = { includeThoughts: config?.thinkingConfig?.includeThoughts === true };
  return { chat, stream: ctx.pathStream === true, model, state };
}

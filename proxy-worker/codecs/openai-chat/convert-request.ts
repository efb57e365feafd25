import type { ChatContentPart, ChatMessage, ChatRequest } from "../../chat/types.ts";
import { clampMaxTokens, estimatePromptTokens } from "../common/max-tokens.ts";
import { mapReasoningEffort } from "../common/reasoning-effort.ts";
import type { ChatMessageIn, ChatRequestBody } from "./request-schema.ts";

/** What the chat codec must remember between the request and its answer. */
export interface ChatCodecState {
  /** The client asked for logprobs: only then does the answer keep them (the engine adapter always asks). */
  logprobs: boolean;
  /** `stream_options.include_usage`: a final `choices:[]` chunk carries usage. */
  includeUsage: boolean;
}

/** Fields that describe the client's stream, or that the codec rewrites: never sent upstream as received. */
const CLIENT_ONLY_FIELDS = new Set([
  "stream",
  "stream_options",
  "max_completion_tokens",
  "messages",
  "max_tokens",
]);

function convertContent(content: ChatMessageIn["content"]): ChatMessage["content"] {
  if (content === undefined || content === null) return null;
  if (typeof content === "string") return content;
  return content.map((part) => {
    // `image_url` as a bare string is accepted by some servers; vLLM wants the object form.
    if (part.type === "image_url" && typeof part.image_url === "string") {
      return { ...part, image_url: { url: part.image_url } } as ChatContentPart;
    }
    return part as ChatContentPart;
  });
}

/**
 * One history message as the engine's chat template expects it. `developer` becomes `system`
 * because Qwen3-style templates know no developer role (they would drop or reject it), and
 * `reasoning_content` becomes `reasoning`, the field vLLM >= 0.16 renders into the template.
 */
export function convertMessage(message: ChatMessageIn): ChatMessage {
  const { reasoning_content, reasoning, tool_calls, content, role, ...rest } = message;
  const out: ChatMessage = {
    ...(rest as Partial<ChatMessage>),
    role: role === "developer" ? "system" : role === "function" ? "tool" : role,
    content: convertContent(content),
  };
  const thought = reasoning ?? reasoning_content;
  if (role === "assistant" && typeof thought === "string" && thought !== "") out.reasoning = thought;
  if (tool_calls && tool_calls.length > 0) {
    // `type` is optional for some clients; templates and vLLM's validation expect it.
    out.tool_calls = tool_calls.map((call) => ({ ...call, type: "function" as const }));
  }
  return out;
}

/**
 * Engines accept `low|medium|high`; OpenAI clients also send `none`, `minimal` or `xhigh`.
 * `none` turns thinking off for hybrid templates (Qwen3) instead of reaching the engine as a level.
 */
function normalizeReasoningEffort(chat: ChatRequest, effort: string | null | undefined): void {
  if (typeof effort !== "string") return;
  delete chat.reasoning_effort;
  if (effort === "none") {
    chat.chat_template_kwargs = { enable_thinking: false, ...chat.chat_template_kwargs };
    return;
  }
  const level = mapReasoningEffort(effort);
  if (level) chat.reasoning_effort = level;
}

export function convertChatRequest(
  body: ChatRequestBody,
  maxModelLen: number | undefined,
): { chat: ChatRequest; state: ChatCodecState } {
  const passthrough: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    // null means "unset" for OpenAI; vLLM's pydantic models reject null on some fields.
    if (!CLIENT_ONLY_FIELDS.has(key) && value !== null && value !== undefined) passthrough[key] = value;
  }
  const chat: ChatRequest = {
    ...passthrough,
    model: body.model,
    messages: body.messages.map(convertMessage),
    stream: false,
  } as ChatRequest;
  if (typeof body.stop === "string") chat.stop = [body.stop];
  const requested = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const maxTokens = clampMaxTokens(requested, maxModelLen, estimatePromptTokens(chat.messages, chat.tools));
  if (maxTokens !== undefined) chat.max_tokens = maxTokens;
  normalizeReasoningEffort(chat, body.reasoning_effort);
  // tool_choice / parallel_tool_calls without tools make vLLM answer 400.
  if (!chat.tools || chat.tools.length === 0) {
    delete chat.tools;
    delete chat.tool_choice;
    delete chat.parallel_tool_calls;
  }
  return {
    chat,
    state: { logprobs: body.logprobs === true, includeUsage: body.stream_options?.include_usage === true },
  };
}

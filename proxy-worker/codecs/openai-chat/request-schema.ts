import { z } from "zod";

/**
 * What OpenAI Chat clients (Qwen Code, OpenCode's AI SDK, Pi, the official SDKs) send.
 * Lenient: unknown fields pass through to the engine. Strict where a wrong type would corrupt
 * the prompt the policy sees: roles, message content, tool calls, token budgets.
 */

const TextPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const ImagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.union([z.string(), z.looseObject({ url: z.string(), detail: z.string().optional() })]),
});
/** Audio, files and future part types are the engine's business: passed through unchanged. */
const OtherPart = z.looseObject({ type: z.string() });
const ContentPart = z.union([TextPart, ImagePart, OtherPart]);

const Content = z.union([z.string(), z.array(ContentPart), z.null()]);

const ToolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

export const ChatMessageIn = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: Content.optional(),
  name: z.string().optional(),
  reasoning: z.string().nullish(),
  reasoning_content: z.string().nullish(),
  tool_calls: z.array(ToolCall).nullish(),
  tool_call_id: z.string().optional(),
});
export type ChatMessageIn = z.infer<typeof ChatMessageIn>;

const Tool = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const ToolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string() }) }),
]);

const TokenBudget = z.number().int().positive().nullish();

export const ChatRequestBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(ChatMessageIn).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: TokenBudget,
  max_completion_tokens: TokenBudget,
  tools: z.array(Tool).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  n: z.number().int().positive().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().nonnegative().nullish(),
  reasoning_effort: z.string().nullish(),
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
});
export type ChatRequestBody = z.infer<typeof ChatRequestBody>;

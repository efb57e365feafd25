/**
 * Request bodies the dry-run policy accepts. Lenient like vLLM (unknown fields pass), strict
 * on the types of the fields it reads, so a wrong type gets a 400 naming the field.
 */
import { z } from "zod";

const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

const ToolCall = z.looseObject({
  id: z.string().nullish(),
  type: z.literal("function").nullish(),
  function: z.looseObject({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())], {
      error: "expected a JSON string or an object",
    }),
  }),
});

export const ChatMessageSchema = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: z
    .union([z.string(), z.array(ContentPart), z.null()], {
      error: "expected a string, an array of content parts or null",
    })
    .optional(),
  reasoning: z.string().nullish(),
  reasoning_content: z.string().nullish(),
  tool_calls: z.array(ToolCall).nullish(),
  tool_call_id: z.string().nullish(),
  name: z.string().nullish(),
});

export const ToolSchema = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
  }),
});

const TemplateKwargs = z.record(z.string(), z.unknown()).nullish();
const Tools = z.array(ToolSchema).nullish();
const PositiveInt = z.number().int().min(1).nullish();

export const ChatCompletionRequestSchema = z.looseObject({
  model: z.string().nullish(),
  messages: z.array(ChatMessageSchema).min(1),
  tools: Tools,
  tool_choice: z
    .union([z.string(), z.looseObject({})], { error: 'expected "auto", "none", "required" or an object' })
    .nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: PositiveInt,
  max_completion_tokens: PositiveInt,
  n: z.number().int().min(1).max(1, "the dry-run policy samples one choice (n must be 1)").nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  seed: z.number().int().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  return_token_ids: z.boolean().nullish(),
  return_tokens_as_token_ids: z.boolean().nullish(),
  // SGLang's id flags (read only when the policy answers in an SGLang shape).
  return_prompt_token_ids: z.boolean().nullish(),
  return_meta_info: z.boolean().nullish(),
  return_input_ids_in_sglext: z.boolean().nullish(),
  return_output_ids_in_sglext: z.boolean().nullish(),
  chat_template_kwargs: TemplateKwargs,
  // Token prompts (token-prompt.ts): SGLang's and vLLM's channels.
  input_ids: z.array(z.number().int().min(0)).nullish(),
  kv_transfer_params: z
    .looseObject({ prompt_token_ids: z.array(z.number().int().min(0)).nullish() })
    .nullish(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

export const TokenizePromptSchema = z.looseObject({
  model: z.string().nullish(),
  prompt: z.string(),
  add_special_tokens: z.boolean().nullish(),
  return_token_strs: z.boolean().nullish(),
});

export const TokenizeChatSchema = z.looseObject({
  model: z.string().nullish(),
  messages: z.array(ChatMessageSchema),
  tools: Tools,
  add_generation_prompt: z.boolean().nullish(),
  continue_final_message: z.boolean().nullish(),
  chat_template_kwargs: TemplateKwargs,
  return_token_strs: z.boolean().nullish(),
});

export type TokenizePromptRequest = z.infer<typeof TokenizePromptSchema>;
export type TokenizeChatRequest = z.infer<typeof TokenizeChatSchema>;

export const DetokenizeRequestSchema = z.looseObject({
  model: z.string().nullish(),
  tokens: z.array(z.number().int().min(0)),
});

/** "messages.0.role: Invalid option ..." — the first problem, with where it is. */
export function describeIssue(error: z.ZodError): { message: string; param: string | null } {
  const issue = error.issues[0];
  const path = issue?.path.join(".") ?? "";
  return {
    message: path ? `${path}: ${issue.message}` : (issue?.message ?? "invalid request"),
    param: path || null,
  };
}

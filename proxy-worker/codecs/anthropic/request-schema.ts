import { z } from "zod";

/**
 * The Anthropic Messages request as harnesses send it. Lenient where providers add fields
 * (`cache_control`, `citations`, beta fields are ignored), strict where a wrong type would
 * corrupt the prompt (text must be a string, tool_use must have an id and a name).
 */

const Text = z.object({ type: z.literal("text"), text: z.string() });

const ImageSource = z.object({
  type: z.string(),
  media_type: z.string().optional(),
  data: z.string().optional(),
  url: z.string().optional(),
});
const Image = z.object({ type: z.literal("image"), source: ImageSource });

const DocumentBlock = z.object({
  type: z.literal("document"),
  source: z.object({ type: z.string(), data: z.string().optional(), media_type: z.string().optional() }),
  title: z.string().nullish(),
});

const ToolUse = z.object({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.unknown().optional(),
});

const Thinking = z.object({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string().optional(),
});
const RedactedThinking = z.object({ type: z.literal("redacted_thinking") });

const ToolResultItem = z.discriminatedUnion("type", [Text, Image, DocumentBlock]);
const TOOL_RESULT_ITEM_TYPES = new Set(["text", "image", "document"]);
/**
 * Items of unknown type inside a tool result (e.g. `tool_reference`) are kept as opaque objects;
 * a known type must match its own schema, so a malformed image is a 400, not an opaque item.
 */
const OpaqueItem = z.looseObject({
  type: z
    .string()
    .refine((t) => !TOOL_RESULT_ITEM_TYPES.has(t), { message: "malformed text, image or document item" }),
});

const ToolResult = z.object({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(z.union([ToolResultItem, OpaqueItem]))]).optional(),
  is_error: z.boolean().optional(),
});

export type AnthropicText = z.infer<typeof Text>;
export type AnthropicImage = z.infer<typeof Image>;
export type AnthropicDocument = z.infer<typeof DocumentBlock>;
export type AnthropicToolUse = z.infer<typeof ToolUse>;
export type AnthropicToolResult = z.infer<typeof ToolResult>;
export type AnthropicThinking = z.infer<typeof Thinking>;
export type AnthropicIgnored = { type: "ignored"; was: string };

export type AnthropicBlock =
  | AnthropicText
  | AnthropicImage
  | AnthropicDocument
  | AnthropicToolUse
  | AnthropicToolResult
  | AnthropicThinking
  | { type: "redacted_thinking" }
  | AnthropicIgnored;

const KNOWN_BLOCKS: Record<string, z.ZodType> = {
  text: Text,
  image: Image,
  document: DocumentBlock,
  tool_use: ToolUse,
  tool_result: ToolResult,
  thinking: Thinking,
  redacted_thinking: RedactedThinking,
};

/**
 * Known block types are validated by their own schema (so errors name the right field); unknown
 * ones (server tool results, `container_upload`, future types) become `ignored` instead of a 400.
 */
const Block = z.looseObject({ type: z.string() }).transform((block, ctx): AnthropicBlock => {
  const schema = KNOWN_BLOCKS[block.type];
  if (!schema) return { type: "ignored", was: block.type };
  const parsed = schema.safeParse(block);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      ctx.issues.push({ ...issue, input: block } as (typeof ctx.issues)[number]);
    }
    return z.NEVER;
  }
  return parsed.data as AnthropicBlock;
});

const Message = z.object({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(Block)]),
});
export type AnthropicMessage = z.infer<typeof Message>;

const SystemBlock = z.looseObject({ type: z.string(), text: z.string().optional() });

const Tool = z.looseObject({
  name: z.string().min(1),
  type: z.string().optional(),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
});
export type AnthropicTool = z.infer<typeof Tool>;

const ToolChoice = z.object({
  type: z.enum(["auto", "any", "none", "tool"]),
  name: z.string().optional(),
  disable_parallel_tool_use: z.boolean().optional(),
});
export type AnthropicToolChoice = z.infer<typeof ToolChoice>;

const Thinking_Config = z.object({
  type: z.enum(["enabled", "disabled", "adaptive"]),
  budget_tokens: z.number().int().optional(),
});

const JsonSchemaFormat = z.object({ type: z.string(), schema: z.record(z.string(), z.unknown()).optional() });

export const AnthropicRequest = z.object({
  model: z.string().min(1),
  messages: z.array(Message),
  system: z.union([z.string(), z.array(SystemBlock)]).optional(),
  max_tokens: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.number().int().optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).optional(),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  thinking: Thinking_Config.optional(),
  output_config: z
    .looseObject({ effort: z.string().optional(), format: JsonSchemaFormat.optional() })
    .optional(),
  /** The older beta spelling of `output_config.format`. */
  output_format: JsonSchemaFormat.optional(),
});
export type AnthropicRequest = z.infer<typeof AnthropicRequest>;

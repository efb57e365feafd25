import { z } from "zod";

/**
 * What Responses clients (Codex CLI, the official SDKs) send. The body is lenient: `store`,
 * `include`, `prompt_cache_key`, `client_metadata`, `service_tier`, `truncation` and future
 * fields are accepted and ignored. Input items are checked one by one (see input-item-schemas.ts)
 * so an error names the exact item.
 */
export const ResponsesRequestBody = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({ type: z.string().optional() }))]).nullish(),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: z.union([z.string(), z.looseObject({ type: z.string() })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish(), summary: z.string().nullish() }).nullish(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).nullish() }).nullish(),
  stream: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
  background: z.boolean().nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
});
export type ResponsesRequestBody = z.infer<typeof ResponsesRequestBody>;

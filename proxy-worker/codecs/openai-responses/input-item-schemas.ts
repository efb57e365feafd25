import { z } from "zod";

/** Parts a message item may hold. `input_image` by `file_id` is parsed so it can be refused by name. */
export const InputTextPart = z.looseObject({ type: z.enum(["input_text", "output_text"]), text: z.string() });
export const RefusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
export const InputImagePart = z.looseObject({
  type: z.literal("input_image"),
  image_url: z.string().nullish(),
  file_id: z.string().nullish(),
  detail: z.string().nullish(),
});
const OtherPart = z.looseObject({ type: z.string() });
export const MessagePart = z.union([InputTextPart, RefusalPart, InputImagePart, OtherPart]);
export type MessagePart = z.infer<typeof MessagePart>;

export const MessageItem = z.looseObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(MessagePart)]),
});

/** Set on a call of a tool offered inside a `namespace` tool (see namespace-tools.ts). */
const CallNamespace = z.string().min(1).nullish();

export const FunctionCallItem = z.looseObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  namespace: CallNamespace,
  arguments: z.string(),
});

export const CustomToolCallItem = z.looseObject({
  type: z.literal("custom_tool_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  namespace: CallNamespace,
  input: z.string(),
});

const ToolOutput = z.union([z.string(), z.array(MessagePart)]);

export const ToolCallOutputItem = z.looseObject({
  type: z.enum(["function_call_output", "custom_tool_call_output"]),
  call_id: z.string().min(1),
  output: ToolOutput,
});

const TextEntry = z.looseObject({ type: z.string(), text: z.string() });

export const ReasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: z.string().nullish(),
  summary: z.array(TextEntry).nullish(),
  content: z.array(TextEntry).nullish(),
  encrypted_content: z.string().nullish(),
});

export const LocalShellAction = z.looseObject({
  type: z.literal("exec"),
  command: z.array(z.string()),
  timeout_ms: z.number().nullish(),
  working_directory: z.string().nullish(),
  env: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
});
export type LocalShellAction = z.infer<typeof LocalShellAction>;

/** Codex writes `call_id`; the public API sometimes only `id`. One of them names the call. */
export const LocalShellCallItem = z
  .looseObject({
    type: z.literal("local_shell_call"),
    id: z.string().nullish(),
    call_id: z.string().nullish(),
    action: LocalShellAction,
  })
  .refine((item) => Boolean(item.call_id || item.id), { message: "local_shell_call needs call_id or id" });

/** The public API answers a local shell call with `{type:"local_shell_call_output", id, output}`. */
export const LocalShellOutputItem = z.looseObject({
  type: z.literal("local_shell_call_output"),
  id: z.string().nullish(),
  call_id: z.string().nullish(),
  output: ToolOutput,
});

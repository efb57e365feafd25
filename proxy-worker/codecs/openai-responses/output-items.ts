import type { ChatChoice } from "../../chat/types.ts";
import { upstreamReasoning } from "../common/upstream-message.ts";
import { upstreamToolCalls } from "../common/upstream-tool-calls.ts";
import type { ResponsesCodecState } from "./convert-request.ts";
import { LOCAL_SHELL_FUNCTION } from "./convert-tools.ts";
import { namespacedTool } from "./namespace-tools.ts";
import { encodeReasoningEnvelope } from "./reasoning-envelope.ts";
import { responseIds } from "./response-ids.ts";

type ItemStatus = "completed" | "incomplete";

export interface ReasoningOutput {
  type: "reasoning";
  id: string;
  summary: { type: "summary_text"; text: string }[];
  encrypted_content: string;
}
export interface MessageOutput {
  type: "message";
  id: string;
  status: ItemStatus;
  role: "assistant";
  content: { type: "output_text"; text: string; annotations: never[]; logprobs: never[] }[];
}
/** `namespace` only on a call of a tool offered inside a namespace tool; `name` is then its own name. */
export interface FunctionCallOutput {
  type: "function_call";
  id: string;
  status: ItemStatus;
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
}
export interface CustomToolCallOutput {
  type: "custom_tool_call";
  id: string;
  status: ItemStatus;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
}
export interface LocalShellCallOutput {
  type: "local_shell_call";
  id: string;
  status: ItemStatus;
  call_id: string;
  action: {
    type: "exec";
    command: string[];
    timeout_ms: number | null;
    working_directory: string | null;
    env: Record<string, string>;
    user: null;
  };
}
export type OutputItem =
  | ReasoningOutput
  | MessageOutput
  | FunctionCallOutput
  | CustomToolCallOutput
  | LocalShellCallOutput;

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A custom tool's raw input from the function call the engine produced. If the model did not
 * wrap it as `{"input": "..."}` the raw argument text is the best guess of what it meant.
 */
function customInput(args: string): string {
  const parsed = parseObject(args);
  return typeof parsed?.input === "string" ? parsed.input : args;
}

function localShellCommand(args: Record<string, unknown> | undefined): string[] | undefined {
  const command = args?.command;
  if (Array.isArray(command) && command.every((c) => typeof c === "string")) return command as string[];
  if (typeof command === "string") return ["bash", "-lc", command];
  return undefined;
}

/**
 * The Responses output items for one chat choice, in the order the model produced them:
 * reasoning (rs_), message text (msg_), then one item per tool call (fc_ / ctc_ / lsh_).
 * The reasoning text goes into the summary (what Codex shows) and into `encrypted_content`
 * (what Codex sends back, see reasoning-envelope.ts).
 */
export function buildOutputItems(
  chatId: string,
  choice: ChatChoice | undefined,
  state: ResponsesCodecState,
  status: ItemStatus,
): OutputItem[] {
  if (!choice) return [];
  const ids = responseIds(chatId);
  const items: OutputItem[] = [];
  const reasoning = upstreamReasoning(choice);
  if (reasoning !== "") {
    items.push({
      type: "reasoning",
      id: ids.reasoning,
      summary: [{ type: "summary_text", text: reasoning }],
      encrypted_content: encodeReasoningEnvelope(reasoning),
    });
  }
  const content = choice.message.content;
  if (typeof content === "string" && content !== "") {
    items.push({
      type: "message",
      id: ids.message,
      status,
      role: "assistant",
      content: [{ type: "output_text", text: content, annotations: [], logprobs: [] }],
    });
  }
  for (const call of upstreamToolCalls(choice, `call_${chatId}`)) {
    const name = call.function.name;
    const args = call.function.arguments;
    // The engine called the flattened function; the client knows the tool by namespace and name.
    const inner = namespacedTool(state.namespaced, name);
    const named = inner ? { name: inner.name, namespace: inner.namespace } : { name };
    if (state.customTools.includes(name)) {
      items.push({
        type: "custom_tool_call",
        id: ids.call(call.id, "ctc"),
        status: "completed",
        call_id: call.id,
        ...named,
        input: customInput(args),
      });
      continue;
    }
    const shellArgs = state.localShell && name === LOCAL_SHELL_FUNCTION ? parseObject(args) : undefined;
    const command = localShellCommand(shellArgs);
    if (command) {
      items.push({
        type: "local_shell_call",
        id: ids.call(call.id, "lsh"),
        status: "completed",
        call_id: call.id,
        action: {
          type: "exec",
          command,
          timeout_ms: typeof shellArgs?.timeout_ms === "number" ? shellArgs.timeout_ms : null,
          working_directory: typeof shellArgs?.workdir === "string" ? shellArgs.workdir : null,
          env: {},
          user: null,
        },
      });
      continue;
    }
    items.push({
      type: "function_call",
      id: ids.call(call.id, "fc"),
      status: "completed",
      call_id: call.id,
      ...named,
      arguments: args,
    });
  }
  return items;
}

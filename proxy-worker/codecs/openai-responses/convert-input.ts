import type { ChatContentPart, ChatMessage, ChatToolCall } from "../../chat/types.ts";
import { CodecError } from "../codec.ts";
import { parseOrThrow } from "../common/zod-codec-error.ts";
import { LOCAL_SHELL_FUNCTION } from "./convert-tools.ts";
import {
  CustomToolCallItem,
  FunctionCallItem,
  type LocalShellAction,
  LocalShellCallItem,
  LocalShellOutputItem,
  MessageItem,
  type MessagePart,
  ReasoningItem,
  ToolCallOutputItem,
} from "./input-item-schemas.ts";
import { flatToolName } from "./namespace-tools.ts";
import { decodeReasoningEnvelope } from "./reasoning-envelope.ts";

/** Items that only make sense on OpenAI's servers and carry nothing the model must see again. */
const IGNORED_ITEM_TYPES = new Set(["web_search_call", "image_generation_call", "file_search_call"]);

/** The assistant turn being assembled: reasoning, then text, then tool calls, as one chat message. */
interface PendingAssistant {
  reasoning?: string;
  content: string | null;
  toolCalls: ChatToolCall[];
}

/** Text and images of a part list; images as chat parts, everything else refused by name. */
function convertParts(parts: MessagePart[], at: string): { text: string[]; images: ChatContentPart[] } {
  const text: string[] = [];
  const images: ChatContentPart[] = [];
  parts.forEach((part, index) => {
    const where = `${at}[${index}]`;
    const p = part as Record<string, unknown>;
    if (part.type === "input_text" || part.type === "output_text") text.push(String(p.text));
    else if (part.type === "refusal") text.push(String(p.refusal));
    else if (part.type === "input_image") {
      if (typeof p.image_url === "string" && p.image_url !== "") {
        const detail = typeof p.detail === "string" ? { detail: p.detail } : {};
        images.push({ type: "image_url", image_url: { url: p.image_url, ...detail } });
      } else {
        throw new CodecError(
          400,
          `${where}: input_image by file_id is not supported (this proxy keeps no files); send image_url as a URL or data: URL`,
          `${where}.file_id`,
        );
      }
    } else {
      throw new CodecError(
        400,
        `${where}: content part type '${part.type}' is not supported`,
        `${where}.type`,
      );
    }
  });
  return { text, images };
}

/** The engine's name of a called tool: a namespaced call is the function it was flattened to. */
function calledName(item: { name: string; namespace?: string | null }): string {
  return item.namespace ? flatToolName(item.namespace, item.name) : item.name;
}

/** Reasoning text of an input item: our envelope (exact), else raw content, else the summaries. */
function reasoningText(item: ReturnType<typeof ReasoningItem.parse>): string {
  const fromEnvelope = decodeReasoningEnvelope(item.encrypted_content);
  if (fromEnvelope !== undefined) return fromEnvelope;
  if (item.content && item.content.length > 0) return item.content.map((c) => c.text).join("\n");
  return (item.summary ?? []).map((s) => s.text).join("\n\n");
}

function localShellArguments(action: LocalShellAction): string {
  return JSON.stringify({
    command: action.command,
    ...(action.working_directory ? { workdir: action.working_directory } : {}),
    ...(typeof action.timeout_ms === "number" ? { timeout_ms: action.timeout_ms } : {}),
  });
}

/**
 * Responses `input` items -> chat messages. Consecutive reasoning / assistant text / tool calls of
 * one model turn become ONE assistant message (reasoning attached to it), because that is the
 * message the engine produced and its template must render it back identically. Tool outputs
 * become `tool` messages; images inside them follow in a user message after the run of outputs,
 * since chat templates only take text in tool results.
 */
export function convertInput(input: string | readonly { type?: string }[] | null | undefined): ChatMessage[] {
  if (input === null || input === undefined) return [];
  if (typeof input === "string") return [{ role: "user", content: input }];

  const messages: ChatMessage[] = [];
  let pending: PendingAssistant | null = null;
  let deferredImages: ChatContentPart[] = [];

  const flushAssistant = () => {
    if (!pending) return;
    const message: ChatMessage = { role: "assistant", content: pending.content };
    if (pending.content === null && pending.toolCalls.length === 0) message.content = "";
    if (pending.reasoning !== undefined) message.reasoning = pending.reasoning;
    if (pending.toolCalls.length > 0) message.tool_calls = pending.toolCalls;
    messages.push(message);
    pending = null;
  };
  const flushImages = () => {
    if (deferredImages.length === 0) return;
    messages.push({ role: "user", content: deferredImages });
    deferredImages = [];
  };
  /**
   * The assistant message an item belongs to. Calls always join the open turn (consecutive calls
   * are one message); reasoning or text after text or calls starts the next turn.
   */
  const openAssistant = (startsText: boolean): PendingAssistant => {
    flushImages();
    if (startsText && pending && (pending.toolCalls.length > 0 || pending.content !== null)) flushAssistant();
    pending ??= { content: null, toolCalls: [] };
    return pending;
  };
  const addToolCall = (id: string, name: string, args: string) => {
    openAssistant(false).toolCalls.push({ id, type: "function", function: { name, arguments: args } });
  };
  const addToolOutput = (callId: string, output: string | MessagePart[], at: string) => {
    flushAssistant();
    if (typeof output === "string") {
      messages.push({ role: "tool", tool_call_id: callId, content: output });
      return;
    }
    const { text, images } = convertParts(output, `${at}.output`);
    messages.push({ role: "tool", tool_call_id: callId, content: text.join("\n") });
    deferredImages.push(...images);
  };

  input.forEach((raw, index) => {
    const at = `input[${index}]`;
    const type = raw.type ?? "message";
    if (type === "message") {
      const item = parseOrThrow(MessageItem, raw, "input item", at);
      const { text, images } =
        typeof item.content === "string"
          ? { text: [item.content], images: [] }
          : convertParts(item.content, `${at}.content`);
      if (item.role === "assistant") {
        if (images.length > 0) throw new CodecError(400, `${at}: assistant messages cannot hold images`, at);
        const turn = openAssistant(true);
        turn.content = (turn.content ?? "") + text.join("");
        return;
      }
      flushAssistant();
      flushImages();
      // Several text parts are joined with "\n", as vLLM does for string-content templates.
      const content: ChatMessage["content"] =
        images.length === 0
          ? text.join("\n")
          : [...text.map((t) => ({ type: "text" as const, text: t })), ...images];
      // Qwen3-style templates know no `developer` role.
      messages.push({ role: item.role === "developer" ? "system" : item.role, content });
    } else if (type === "reasoning") {
      const item = parseOrThrow(ReasoningItem, raw, "input item", at);
      const text = reasoningText(item);
      // Reasoning opens a turn: it comes before the text and calls of the message it belongs to.
      const target = openAssistant(true);
      target.reasoning = target.reasoning === undefined ? text : `${target.reasoning}\n\n${text}`;
    } else if (type === "function_call") {
      const item = parseOrThrow(FunctionCallItem, raw, "input item", at);
      addToolCall(item.call_id, calledName(item), item.arguments);
    } else if (type === "custom_tool_call") {
      const item = parseOrThrow(CustomToolCallItem, raw, "input item", at);
      addToolCall(item.call_id, calledName(item), JSON.stringify({ input: item.input }));
    } else if (type === "local_shell_call") {
      const item = parseOrThrow(LocalShellCallItem, raw, "input item", at);
      addToolCall(
        (item.call_id || item.id) as string,
        LOCAL_SHELL_FUNCTION,
        localShellArguments(item.action),
      );
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      const item = parseOrThrow(ToolCallOutputItem, raw, "input item", at);
      addToolOutput(item.call_id, item.output, at);
    } else if (type === "local_shell_call_output") {
      const item = parseOrThrow(LocalShellOutputItem, raw, "input item", at);
      const callId = item.call_id || item.id;
      if (!callId)
        throw new CodecError(400, `${at}: local_shell_call_output needs call_id or id`, `${at}.call_id`);
      addToolOutput(callId, item.output, at);
    } else if (type === "item_reference") {
      throw new CodecError(
        400,
        `${at}: item_reference needs stored responses, which this stateless proxy does not keep; send the full item`,
        `${at}.type`,
      );
    } else if (!IGNORED_ITEM_TYPES.has(type)) {
      throw new CodecError(400, `${at}: input item type '${type}' is not supported`, `${at}.type`);
    }
  });
  flushAssistant();
  flushImages();
  return messages;
}

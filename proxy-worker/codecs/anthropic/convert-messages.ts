import type { ChatContentPart, ChatMessage, ChatToolCall } from "../../chat/types.ts";
import { stringifyArguments } from "../common/parse-json-object.ts";
import type {
  AnthropicBlock,
  AnthropicDocument,
  AnthropicImage,
  AnthropicMessage,
  AnthropicToolResult,
} from "./request-schema.ts";
import { systemText } from "./system-prompt.ts";
import { fromToolUseId } from "./tool-use-id.ts";

/** Prefix for a tool result the client flagged `is_error`: chat has no such flag, the model must see it. */
export const TOOL_ERROR_PREFIX = "[tool error] ";

export function imageUrl(image: AnthropicImage): string {
  const { source } = image;
  if (source.type === "url" && source.url) return source.url;
  return `data:${source.media_type ?? "image/png"};base64,${source.data ?? ""}`;
}

/** Plain-text documents become text; other documents (PDF) cannot be read by a chat model as is. */
function documentText(document: AnthropicDocument): string {
  const title = document.title ? `${document.title}\n` : "";
  if (document.source.type === "text" && document.source.data) return title + document.source.data;
  return `${title}[document of type ${document.source.media_type ?? document.source.type} omitted]`;
}

function userPart(block: AnthropicBlock): ChatContentPart | undefined {
  if (block.type === "text") return block.text.length > 0 ? { type: "text", text: block.text } : undefined;
  if (block.type === "image") return { type: "image_url", image_url: { url: imageUrl(block) } };
  if (block.type === "document") return { type: "text", text: documentText(block) };
  return undefined;
}

/** A single text part is sent as a plain string, the form every chat template renders the same way. */
function partsToContent(parts: ChatContentPart[]): string | ChatContentPart[] {
  if (parts.length === 1 && parts[0].type === "text") return parts[0].text;
  return parts;
}

function toolResultMessage(block: AnthropicToolResult, images: ChatContentPart[]): ChatMessage {
  const texts: string[] = [];
  if (typeof block.content === "string") texts.push(block.content);
  else {
    for (const item of block.content ?? []) {
      if (item.type === "text" && typeof item.text === "string") texts.push(item.text);
      else if (item.type === "image")
        images.push({ type: "image_url", image_url: { url: imageUrl(item as AnthropicImage) } });
      else if (item.type === "document") texts.push(documentText(item as AnthropicDocument));
    }
  }
  const text = texts.join("\n");
  return {
    role: "tool",
    tool_call_id: fromToolUseId(block.tool_use_id),
    content: block.is_error ? TOOL_ERROR_PREFIX + text : text,
  };
}

/**
 * A user turn: tool results first (chat needs them right after the assistant's calls), then one user
 * message with the images the tool results carried (tool messages are text-only) and the turn's own
 * text and images. Empty text blocks are dropped; a turn with nothing left adds no message.
 */
function convertUserTurn(content: AnthropicMessage["content"]): ChatMessage[] {
  if (typeof content === "string") return content.length > 0 ? [{ role: "user", content }] : [];
  const messages: ChatMessage[] = [];
  const toolImages: ChatContentPart[] = [];
  const parts: ChatContentPart[] = [];
  for (const block of content) {
    if (block.type === "tool_result") messages.push(toolResultMessage(block, toolImages));
    else {
      const part = userPart(block);
      if (part) parts.push(part);
    }
  }
  const all = [...toolImages, ...parts];
  if (all.length > 0) messages.push({ role: "user", content: partsToContent(all) });
  return messages;
}

/**
 * An assistant turn: text joined, thinking into `reasoning` (never a content part: templates render
 * it themselves), tool_use into tool_calls. With nothing left the content is "" so the message stays
 * valid; with tool calls and no text it is null, as OpenAI clients send it.
 */
function convertAssistantTurn(content: AnthropicMessage["content"]): ChatMessage[] {
  if (typeof content === "string") return [{ role: "assistant", content }];
  let text = "";
  let reasoning = "";
  const toolCalls: ChatToolCall[] = [];
  for (const block of content) {
    if (block.type === "text") text += block.text;
    else if (block.type === "thinking") reasoning += block.thinking;
    else if (block.type === "tool_use") {
      toolCalls.push({
        id: fromToolUseId(block.id),
        type: "function",
        function: { name: block.name, arguments: stringifyArguments(block.input) },
      });
    }
  }
  const message: ChatMessage = {
    role: "assistant",
    content: text.length > 0 ? text : toolCalls.length > 0 ? null : "",
  };
  if (reasoning.length > 0) message.reasoning = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return [message];
}

/** History in order; `role:"system"` items stay in place as system messages (system-prompt.ts says why). */
export function convertMessages(messages: AnthropicMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const message of messages) {
    if (message.role === "user") out.push(...convertUserTurn(message.content));
    else if (message.role === "assistant") out.push(...convertAssistantTurn(message.content));
    else {
      const text = systemText(message.content);
      if (text !== undefined) out.push({ role: "system", content: text });
    }
  }
  return out;
}

import type { ChatContentPart, ChatMessage, ChatToolCall } from "../../chat/types.ts";
import type { GoogleContent, GooglePart } from "./request-schema.ts";

/**
 * Media as a chat part. Chat content carries only images: an image (or a part without a MIME type)
 * becomes image_url; other media (PDF, audio, video) become a text note, so the engine is not handed
 * a data URL it would reject and the model still sees that something was attached.
 */
function mediaPart(part: GooglePart): ChatContentPart | undefined {
  const media = part.inlineData ?? part.fileData;
  if (!media) return undefined;
  const mimeType = media.mimeType ?? "image/png";
  if (mimeType.startsWith("image/")) {
    const url = part.inlineData
      ? `data:${mimeType};base64,${part.inlineData.data}`
      : (part.fileData?.fileUri ?? "");
    return { type: "image_url", image_url: { url } };
  }
  const where = part.fileData ? ` at ${part.fileData.fileUri}` : "";
  return {
    type: "text",
    text: `[attachment of type ${mimeType}${where} omitted: the model reads text and images only]`,
  };
}

/**
 * Gemini CLI answers a tool with `{output: "..."}` or `{error: "..."}`. The model reads the text
 * better unwrapped than as escaped JSON; any other shape is sent as JSON.
 */
export function functionResponseText(response: unknown): string {
  if (typeof response === "string") return response;
  if (response && typeof response === "object" && !Array.isArray(response)) {
    const keys = Object.keys(response);
    const record = response as Record<string, unknown>;
    if (keys.length === 1 && keys[0] === "output" && typeof record.output === "string") return record.output;
    if (keys.length === 1 && keys[0] === "error" && typeof record.error === "string")
      return `Error: ${record.error}`;
  }
  return JSON.stringify(response ?? {});
}

/** Id for a history call that came without one: its position, stable as history only grows. */
export function positionalCallId(contentIndex: number, partIndex: number): string {
  return `call_${contentIndex}_${partIndex}`;
}

interface PendingCall {
  id: string;
  name: string;
}

/**
 * Pairs a functionResponse with a call of the previous model turn: by id when it has one that
 * matches, else the first unanswered call with the same name, else the first unanswered call.
 */
function takePending(
  pending: PendingCall[],
  id: string | undefined,
  name: string | undefined,
): PendingCall | undefined {
  let index = id ? pending.findIndex((call) => call.id === id) : -1;
  if (index < 0 && name) index = pending.findIndex((call) => call.name === name);
  if (index < 0 && pending.length > 0) index = 0;
  if (index < 0) return undefined;
  return pending.splice(index, 1)[0];
}

function convertModelTurn(content: GoogleContent, contentIndex: number, pending: PendingCall[]): ChatMessage {
  let text = "";
  let reasoning = "";
  const toolCalls: ChatToolCall[] = [];
  content.parts.forEach((part, partIndex) => {
    if (part.functionCall) {
      const id = part.functionCall.id || positionalCallId(contentIndex, partIndex);
      toolCalls.push({
        id,
        type: "function",
        function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) },
      });
      pending.push({ id, name: part.functionCall.name });
    } else if (typeof part.text === "string") {
      if (part.thought) reasoning += part.text;
      else text += part.text;
    }
  });
  const message: ChatMessage = {
    role: "assistant",
    content: text.length > 0 ? text : toolCalls.length > 0 ? null : "",
  };
  if (reasoning.length > 0) message.reasoning = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return message;
}

/** A user turn: tool messages first, then one user message with media of the results and the turn's own parts. */
function convertUserTurn(
  content: GoogleContent,
  contentIndex: number,
  pending: PendingCall[],
): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const resultMedia: ChatContentPart[] = [];
  const parts: ChatContentPart[] = [];
  content.parts.forEach((part, partIndex) => {
    if (part.functionResponse) {
      const response = part.functionResponse;
      const call = takePending(pending, response.id, response.name);
      messages.push({
        role: "tool",
        tool_call_id: call?.id ?? response.id ?? positionalCallId(contentIndex, partIndex),
        content: functionResponseText(response.response),
      });
      for (const media of response.parts ?? []) {
        const converted = mediaPart(media as GooglePart);
        if (converted) resultMedia.push(converted);
      }
      return;
    }
    const media = mediaPart(part);
    if (media) parts.push(media);
    else if (typeof part.text === "string" && part.text.length > 0 && !part.thought) {
      parts.push({ type: "text", text: part.text });
    }
  });
  const all = [...resultMedia, ...parts];
  if (all.length === 1 && all[0].type === "text") messages.push({ role: "user", content: all[0].text });
  else if (all.length > 0) messages.push({ role: "user", content: all });
  return messages;
}

/** `contents` in order; role `model` is the assistant, anything else (user, function) the user side. */
export function convertContents(contents: GoogleContent[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pending: PendingCall[] = [];
  contents.forEach((content, contentIndex) => {
    if (content.role === "model") {
      pending = [];
      out.push(convertModelTurn(content, contentIndex, pending));
    } else {
      out.push(...convertUserTurn(content, contentIndex, pending));
    }
  });
  return out;
}

import type { ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { sseFrame } from "../common/sse-frame.ts";
import { encodeResponsesResponse, type ResponseObject, responseShell } from "./encode-response.ts";
import type { OutputItem } from "./output-items.ts";

/** Numbers every event in order, as the SDKs and Codex expect, and names each frame after its type. */
class EventWriter {
  readonly frames: string[] = [];
  private sequence = 0;
  emit(type: string, fields: Record<string, unknown>): void {
    this.frames.push(sseFrame({ type, sequence_number: this.sequence++, ...fields }, type));
  }
}

/** The item as `output_item.added` announces it: in progress, its text or arguments still empty. */
function startedItem(item: OutputItem): Record<string, unknown> {
  switch (item.type) {
    case "reasoning":
      return { ...item, summary: [] };
    case "message":
      return { ...item, status: "in_progress", content: [] };
    case "function_call":
      return { ...item, status: "in_progress", arguments: "" };
    case "custom_tool_call":
      return { ...item, status: "in_progress", input: "" };
    case "local_shell_call":
      return { ...item, status: "in_progress" };
  }
}

/** The events between `output_item.added` and `output_item.done` that carry an item's body. */
function emitItemBody(writer: EventWriter, item: OutputItem, output_index: number): void {
  const item_id = item.id;
  switch (item.type) {
    case "reasoning":
      item.summary.forEach((part, summary_index) => {
        const at = { item_id, output_index, summary_index };
        writer.emit("response.reasoning_summary_part.added", {
          ...at,
          part: { type: "summary_text", text: "" },
        });
        writer.emit("response.reasoning_summary_text.delta", { ...at, delta: part.text });
        writer.emit("response.reasoning_summary_text.done", { ...at, text: part.text });
        writer.emit("response.reasoning_summary_part.done", { ...at, part });
      });
      return;
    case "message":
      item.content.forEach((part, content_index) => {
        const at = { item_id, output_index, content_index };
        writer.emit("response.content_part.added", { ...at, part: { ...part, text: "" } });
        writer.emit("response.output_text.delta", { ...at, delta: part.text, logprobs: [] });
        writer.emit("response.output_text.done", { ...at, text: part.text, logprobs: [] });
        writer.emit("response.content_part.done", { ...at, part });
      });
      return;
    case "function_call":
      writer.emit("response.function_call_arguments.delta", { item_id, output_index, delta: item.arguments });
      writer.emit("response.function_call_arguments.done", {
        item_id,
        output_index,
        name: item.name,
        arguments: item.arguments,
      });
      return;
    case "custom_tool_call":
      writer.emit("response.custom_tool_call_input.delta", { item_id, output_index, delta: item.input });
      writer.emit("response.custom_tool_call_input.done", { item_id, output_index, input: item.input });
      return;
    case "local_shell_call":
      return;
  }
}

/**
 * The Responses event stream for a complete upstream answer: `response.created` first, then
 * `response.in_progress`, each output item framed by `output_item.added` / `output_item.done`, and a
 * terminal `response.completed` carrying the same object the JSON answer would have been. Truncated
 * output also ends with `response.completed` (status "incomplete" inside): Codex fails a turn whose
 * stream closes without it. No `[DONE]`: Responses streams end by closing.
 */
export function encodeResponsesStream(chat: ChatResponse, ctx: EncodeContext): string[] {
  const final = encodeResponsesResponse(chat, ctx);
  const shell = responseShell(chat, ctx);
  const writer = new EventWriter();
  writer.emit("response.created", { response: shell });
  writer.emit("response.in_progress", { response: shell });
  final.output.forEach((item, output_index) => {
    writer.emit("response.output_item.added", { output_index, item: startedItem(item) });
    emitItemBody(writer, item, output_index);
    writer.emit("response.output_item.done", { output_index, item });
  });
  writer.emit("response.completed", { response: final });
  return writer.frames;
}

/**
 * A stream that fails: for when the upstream failed after the client was promised a stream.
 * Codex maps `context_length_exceeded` to its own compaction path, so the code is kept when known.
 */
export function encodeResponsesFailedStream(
  chat: Pick<ChatResponse, "id">,
  ctx: EncodeContext,
  message: string,
  code = "server_error",
): string[] {
  const writer = new EventWriter();
  const shell: ResponseObject = responseShell(
    { ...chat, object: "chat.completion", created: ctx.now, model: "", choices: [] },
    ctx,
  );
  writer.emit("response.created", { response: shell });
  writer.emit("response.failed", { response: { ...shell, status: "failed", error: { code, message } } });
  return writer.frames;
}

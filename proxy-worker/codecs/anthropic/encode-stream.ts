import type { ChatResponse } from "../../chat/types.ts";
import type { EncodeContext } from "../codec.ts";
import { sseFrame } from "../common/sse-frame.ts";
import { type AnthropicContentBlock, buildMessage } from "./build-message.ts";

function frame(data: { type: string; [field: string]: unknown }): string {
  // The TS SDK dispatches on the `event:` line: a frame without one is silently dropped.
  return sseFrame(data, data.type);
}

/** The empty block announced by content_block_start; its body follows only as deltas. */
function startBlock(block: AnthropicContentBlock): AnthropicContentBlock {
  if (block.type === "thinking") return { type: "thinking", thinking: "", signature: "" };
  if (block.type === "text") return { type: "text", text: "" };
  return { type: "tool_use", id: block.id, name: block.name, input: {} };
}

function blockDeltas(block: AnthropicContentBlock): Record<string, unknown>[] {
  if (block.type === "thinking") {
    // The signature must arrive before content_block_stop, after the thinking text.
    return [
      { type: "thinking_delta", thinking: block.thinking },
      { type: "signature_delta", signature: block.signature },
    ];
  }
  if (block.type === "text") return [{ type: "text_delta", text: block.text }];
  // Tool input reaches the SDK only through input_json_delta (the start block's input stays {}).
  return [{ type: "input_json_delta", partial_json: JSON.stringify(block.input) }];
}

/**
 * The Messages stream for a complete upstream answer, in the order the SDK's MessageStream
 * accumulates: message_start (input usage; output counted in message_delta), ping, per block
 * start/deltas/stop, message_delta (stop reason, full usage), message_stop.
 */
export function encodeAnthropicStream(chat: ChatResponse, ctx: EncodeContext): string[] {
  const message = buildMessage(chat, ctx);
  const frames: string[] = [];
  frames.push(
    frame({
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...message.usage, output_tokens: 0 },
      },
    }),
  );
  frames.push(frame({ type: "ping" }));
  message.content.forEach((block, index) => {
    frames.push(frame({ type: "content_block_start", index, content_block: startBlock(block) }));
    for (const delta of blockDeltas(block)) {
      frames.push(frame({ type: "content_block_delta", index, delta }));
    }
    frames.push(frame({ type: "content_block_stop", index }));
  });
  frames.push(
    frame({
      type: "message_delta",
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: message.usage,
    }),
  );
  frames.push(frame({ type: "message_stop" }));
  return frames;
}

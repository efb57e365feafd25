/**
 * A generation as vLLM's `chat.completion.chunk` stream: a first chunk with the role (and
 * `prompt_token_ids` when asked), then one chunk per token of reasoning/content text
 * (`delta.reasoning` / `delta.content`, with that chunk's `token_ids`), one chunk per
 * complete tool call, a closing chunk with `finish_reason`, and a usage chunk when
 * `stream_options.include_usage`. Markup tokens (`<think>`, newlines around blocks) ride
 * along in the next chunk's `token_ids`, so the chunks' ids concatenate to exactly the
 * non-streamed `token_ids`.
 */

import type { Qwen3 } from "../shared/node/qwen3/qwen3.ts";
import type { Range } from "./assistant-text.ts";
import type { Generation } from "./generate.ts";
import type { ChatCompletionRequest } from "./request-schema.ts";
import {
  completionId,
  logprobsFor,
  type ResponseMeta,
  SYSTEM_FINGERPRINT,
  toolCallsOf,
  usageOf,
} from "./response.ts";

interface PlannedChunk {
  delta: Record<string, unknown>;
  start: number;
  end: number;
}

/** The part of text[a, b) that lies inside `range`, or undefined when none does. */
function textWithin(text: string, range: Range | undefined, a: number, b: number): string | undefined {
  if (!range) return undefined;
  const start = Math.max(range[0], a);
  const end = Math.min(range[1], b);
  return end > start ? text.slice(start, end) : undefined;
}

/** Groups token positions into chunks: [start, end) index ranges with their deltas. */
function planChunks(gen: Generation): PlannedChunk[] {
  const chunks: PlannedChunk[] = [];
  const text = gen.tokenTexts.join("");
  const calls = toolCallsOf(gen);
  let pendingStart = 0;
  let offset = 0;
  let i = 0;
  while (i < gen.ids.length) {
    const a = offset;
    const b = a + gen.tokenTexts[i].length;
    const callIndex = gen.output.toolCalls.findIndex(
      (c) => c.range[0] < Math.max(b, a + 1) && c.range[1] > a,
    );
    if (callIndex >= 0) {
      // The whole tool-call block goes out as one delta carrying id, name and arguments.
      const callEnd = gen.output.toolCalls[callIndex].range[1];
      let j = i;
      let o = offset;
      while (j < gen.ids.length && o < callEnd) o += gen.tokenTexts[j++].length;
      chunks.push({
        delta: { tool_calls: [{ index: callIndex, ...calls[callIndex] }] },
        start: pendingStart,
        end: j,
      });
      pendingStart = j;
      offset = o;
      i = j;
      continue;
    }
    const reasoning = textWithin(text, gen.output.reasoningRange, a, b);
    const content = textWithin(text, gen.output.contentRange, a, b);
    if (reasoning !== undefined || content !== undefined) {
      const delta: Record<string, unknown> = {};
      if (reasoning !== undefined) delta.reasoning = reasoning;
      if (content !== undefined) delta.content = content;
      chunks.push({ delta, start: pendingStart, end: i + 1 });
      pendingStart = i + 1;
    }
    offset = b;
    i++;
  }
  // Whatever markup is left (the closing `<|im_end|>`) travels with the finish chunk; with
  // nothing left (an answer cut at max_tokens), vLLM puts the finish on the last text chunk.
  if (pendingStart < gen.ids.length || chunks.length === 0)
    chunks.push({ delta: {}, start: pendingStart, end: gen.ids.length });
  return chunks;
}

export function chatCompletionChunks(
  q: Qwen3,
  request: ChatCompletionRequest,
  gen: Generation,
  meta: ResponseMeta,
): Record<string, unknown>[] {
  const withIds = request.return_token_ids === true;
  const base = {
    id: completionId(gen),
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
  };
  const out: Record<string, unknown>[] = [
    {
      ...base,
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
      ...(withIds ? { prompt_token_ids: gen.promptIds, prompt_text: null } : {}),
    },
  ];
  const planned = planChunks(gen);
  planned.forEach((chunk, n) => {
    const last = n === planned.length - 1;
    const ids = gen.ids.slice(chunk.start, chunk.end);
    out.push({
      ...base,
      choices: [
        {
          index: 0,
          delta: chunk.delta,
          logprobs: request.logprobs ? { content: logprobsFor(q, request, ids, chunk.start) } : null,
          finish_reason: last ? gen.finishReason : null,
          ...(last ? { stop_reason: null } : {}),
          ...(withIds ? { token_ids: ids } : {}),
        },
      ],
    });
  });
  if (request.stream_options?.include_usage)
    out.push({ ...base, choices: [], usage: usageOf(gen, true), system_fingerprint: SYSTEM_FINGERPRINT });
  return out;
}

export function sseBody(chunks: readonly Record<string, unknown>[]): string {
  return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
}

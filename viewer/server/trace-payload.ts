import type { TraceExtras } from "../../inspect/trace-extras.ts";
import { type ChatTokenIds, type Segment, segmentChat } from "../../shared/node/qwen3/chat-segments.ts";
import { tokenTexts } from "../../shared/node/qwen3/token-texts.ts";
import type { LoadedResult } from "./store-view.ts";

/** What the viewer needs from the tokenizer. */
export interface TokenDecoder {
  tokenBytes(id: number): Uint8Array;
  chatIds: ChatTokenIds;
  /** Texts of tokens that are whole UTF-8 on their own, filled as traces are decoded. */
  standalone: Map<number, string | null>;
}

/** Tokens shown on each side of a chain break. */
const BREAK_CONTEXT = 12;

export interface BreakView {
  reason: string | null;
  parent_trace: number | null;
  /** A sub-agent's spawning tool call in the parent trace. */
  parent_tool_call_id: string | null;
  /** First prompt token that differs from the parent chain's tokens. */
  position: number | null;
  /** The tokens both sides share just before `position`, decoded. */
  common: string[];
  /** From `position` on: what the parent chain had, and what this chain's prompt has. */
  parent_side: string[] | null;
  this_side: string[] | null;
  /** `break_context_ids` as written by reconstruction, decoded. */
  context: string[] | null;
}

export interface TracePayload {
  task_id: string;
  session_id: string;
  index: number;
  trace_count: number;
  status: string;
  reward: number | null;
  finish_reason: string | null;
  policy_version: string | null;
  capture_ids: string[];
  /** SHA-256 of each image in the trace's tokens, engine order (served at `api/images/{hash}`). */
  images: string[];
  metadata: Record<string, unknown>;
  /** The stream is prompt_ids then response_ids; `prompt_len` tokens of prompt. */
  prompt_len: number;
  ids: number[];
  text: string[];
  /** Aligned to the response part of the stream. */
  mask: number[];
  logprobs: number[] | null;
  segments: Segment[];
  extras: TraceExtras;
  break: BreakView | null;
  trainable: number;
}

export function tracePayload(loaded: LoadedResult, index: number, dec: TokenDecoder): TracePayload {
  const { result } = loaded;
  const trace = result.trajectory.traces[index];
  if (!trace) throw new RangeError(`trace ${index} does not exist`);
  const extras = loaded.traceExtras[index] ?? {};
  const ids = [...trace.prompt_ids, ...trace.response_ids];
  const text = tokenTexts(ids, (id) => dec.tokenBytes(id), dec.standalone);
  return {
    task_id: result.task_id,
    session_id: result.session_id,
    index,
    trace_count: result.trajectory.traces.length,
    status: result.status,
    reward: trace.reward ?? result.reward,
    finish_reason: trace.finish_reason,
    policy_version: trace.policy_version,
    capture_ids: trace.capture_ids,
    images: trace.image_hashes,
    metadata: trace.metadata,
    prompt_len: trace.prompt_ids.length,
    ids,
    text,
    mask: trace.loss_mask,
    logprobs: trace.response_logprobs,
    segments: segmentChat(ids, text, dec.chatIds),
    extras,
    break: breakView(loaded, index, extras, dec),
    trainable: trace.loss_mask.reduce<number>((n, m) => n + m, 0),
  };
}

/**
 * Where this chain's prompt stops extending its parent chain. The position comes from
 * reconstruction (`break_position`) when it wrote one, else it is found here by comparing the
 * parent's full sequence with this prompt token by token.
 */
function breakView(
  loaded: LoadedResult,
  index: number,
  extras: TraceExtras,
  dec: TokenDecoder,
): BreakView | null {
  const hasBreak =
    extras.break_reason != null || extras.break_position != null || extras.break_context_ids != null;
  if (!hasBreak) return null;
  const decode = (ids: number[]) => tokenTexts(ids, (id) => dec.tokenBytes(id), dec.standalone);
  const traces = loaded.result.trajectory.traces;
  const trace = traces[index];
  const parentIndex = extras.parent_trace ?? null;
  const parent = parentIndex !== null && parentIndex !== index ? traces[parentIndex] : undefined;
  const view: BreakView = {
    reason: extras.break_reason ?? null,
    parent_trace: parentIndex,
    parent_tool_call_id: extras.parent_tool_call_id ?? null,
    position: extras.break_position ?? null,
    common: [],
    parent_side: null,
    this_side: null,
    context: extras.break_context_ids ? decode(extras.break_context_ids) : null,
  };
  if (!trace || !parent) return view;
  const before = [...parent.prompt_ids, ...parent.response_ids];
  const after = trace.prompt_ids;
  let position = view.position;
  if (position === null) {
    position = 0;
    while (position < before.length && position < after.length && before[position] === after[position])
      position++;
    view.position = position;
  }
  const from = Math.max(0, position - BREAK_CONTEXT);
  view.common = decode(after.slice(from, Math.min(position, after.length)));
  view.parent_side = decode(before.slice(position, position + BREAK_CONTEXT));
  view.this_side = decode(after.slice(position, position + BREAK_CONTEXT));
  return view;
}

import type { CaptureRecord, Provider } from "../shared/schemas/capture.ts";
import type { SessionResult, Trace } from "../shared/schemas/trajectory.ts";
import type { EncodeAnswer } from "./provider-answer.ts";

/**
 * SFT records of one accepted trace, in two forms.
 *
 * Chat form: the trace's LAST capture's request as the harness sent it (its messages and tools, in
 * the harness's own provider format), with the answer it received appended as the final assistant
 * turn in that same format (each provider module's `sftConversation`, e.g. Anthropic's
 * {system, messages: [...request.messages, {role: "assistant", content}], tools}).
 * `polar` holds where the record came from.
 *
 * Token form: the trace itself (prompt_ids, response_ids, loss_mask, response_logprobs): exactly
 * what the policy saw and sampled, for trainers that tokenize nothing.
 */
export interface SftSource {
  task_id: string;
  session_id: string;
  sample_index: number;
  trace_index: number;
  reward: number | null;
  status: string;
  provider: Provider;
  capture_id: string;
  model: string | null;
}

export type SftChatRecord = Record<string, unknown> & { polar: SftSource };

export interface SftTokenRecord {
  polar: Omit<SftSource, "provider" | "capture_id" | "model"> & { capture_ids: string[] };
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: (0 | 1)[];
  response_logprobs: number[] | null;
  finish_reason: string | null;
}

/** Where a record came from, common to both forms. */
function origin(result: SessionResult, trace: Trace, traceIndex: number) {
  return {
    task_id: result.task_id,
    session_id: result.session_id,
    sample_index: result.sample_index,
    trace_index: traceIndex,
    reward: trace.reward,
    status: result.status,
  };
}

export function tokenRecord(result: SessionResult, trace: Trace, traceIndex: number): SftTokenRecord {
  return {
    polar: { ...origin(result, trace, traceIndex), capture_ids: trace.capture_ids },
    prompt_ids: trace.prompt_ids,
    response_ids: trace.response_ids,
    loss_mask: trace.loss_mask,
    response_logprobs: trace.response_logprobs,
    finish_reason: trace.finish_reason,
  };
}

export function chatRecord(
  result: SessionResult,
  trace: Trace,
  traceIndex: number,
  last: CaptureRecord,
  encodeAnswer: EncodeAnswer,
): SftChatRecord {
  const polar: SftSource = {
    ...origin(result, trace, traceIndex),
    provider: last.provider,
    capture_id: last.capture_id,
    model: last.model_requested,
  };
  const request = asObject(last.request, "the captured request");
  const answer = asObject(encodeAnswer(last), "the encoded answer");
  return { ...encodeAnswer.conversation(last.provider, request, answer), polar };
}

function asObject(v: unknown, what: string): Record<string, unknown> {
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(`${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

/** A trace worth training on: at least one token sampled by the policy. */
export function isTrainable(trace: Trace): boolean {
  return trace.loss_mask.some((m) => m === 1);
}

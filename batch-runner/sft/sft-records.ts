import type { CaptureRecord, Provider } from "../../shared/schemas/capture.ts";
import type { SessionResult, Trace } from "../../shared/schemas/trajectory.ts";
import type { EncodeAnswer } from "./provider-answer.ts";

/**
 * SFT records of one accepted trace, in two forms.
 *
 * Chat form: the trace's LAST capture's request as the harness sent it (its messages and tools, in
 * the harness's own provider format), with the answer it received appended as the final assistant
 * turn in that same format:
 *   openai_chat       {messages: [...request.messages, choices[0].message], tools}
 *   anthropic         {system, messages: [...request.messages, {role: "assistant", content}], tools}
 *   openai_responses  {instructions, input: [...request.input, ...response.output], tools}
 *   google            {systemInstruction, contents: [...request.contents, candidates[0].content], tools}
 * Fields the request did not have are left out. `polar` holds where the record came from.
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

export function tokenRecord(result: SessionResult, trace: Trace, traceIndex: number): SftTokenRecord {
  return {
    polar: {
      task_id: result.task_id,
      session_id: result.session_id,
      sample_index: result.sample_index,
      trace_index: traceIndex,
      reward: trace.reward,
      status: result.status,
      capture_ids: trace.capture_ids,
    },
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
    task_id: result.task_id,
    session_id: result.session_id,
    sample_index: result.sample_index,
    trace_index: traceIndex,
    reward: trace.reward,
    status: result.status,
    provider: last.provider,
    capture_id: last.capture_id,
    model: last.model_requested,
  };
  const request = asObject(last.request, "the captured request");
  const answer = asObject(encodeAnswer(last), "the encoded answer");
  return { ...conversation(last.provider, request, answer), polar };
}

function conversation(provider: Provider, req: Record<string, unknown>, answer: Record<string, unknown>) {
  const pick = (...names: string[]) =>
    Object.fromEntries(names.filter((n) => req[n] !== undefined).map((n) => [n, req[n]]));
  switch (provider) {
    case "openai_chat": {
      const choice = asArray(answer.choices, "choices")[0] as { message?: unknown } | undefined;
      if (!choice?.message) throw new Error("the answer has no choices[0].message");
      return { messages: [...asArray(req.messages, "request.messages"), choice.message], ...pick("tools") };
    }
    case "anthropic":
      return {
        ...pick("system"),
        messages: [
          ...asArray(req.messages, "request.messages"),
          { role: "assistant", content: answer.content },
        ],
        ...pick("tools"),
      };
    case "openai_responses": {
      // `input` may be a bare string: the Responses API's shorthand for one user message.
      const input =
        typeof req.input === "string"
          ? [{ role: "user", content: req.input }]
          : asArray(req.input, "request.input");
      return {
        ...pick("instructions"),
        input: [...input, ...asArray(answer.output, "output")],
        ...pick("tools"),
      };
    }
    case "google": {
      const candidate = asArray(answer.candidates, "candidates")[0] as { content?: unknown } | undefined;
      if (!candidate?.content) throw new Error("the answer has no candidates[0].content");
      return {
        ...pick("systemInstruction", "system_instruction"),
        contents: [...asArray(req.contents, "request.contents"), candidate.content],
        ...pick("tools"),
      };
    }
  }
}

function asObject(v: unknown, what: string): Record<string, unknown> {
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(`${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

function asArray(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new Error(`${what} is not an array`);
  return v;
}

/** A trace worth training on: at least one token sampled by the policy. */
export function isTrainable(trace: Trace): boolean {
  return trace.loss_mask.some((m) => m === 1);
}

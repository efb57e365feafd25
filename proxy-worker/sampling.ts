/**
 * Sampling semantics: the task's `agent.sampling` applied over what the harness sent, and the
 * record of what actually went upstream (CaptureRecord.sampling). A param missing from the record
 * was not sent, so the engine's generation-config default applied to it.
 */
import type { CaptureSampling, LogprobsMode } from "../shared/schemas/capture.ts";
import { type AgentSampling, OVERRIDDEN_SAMPLING_PARAMS } from "../shared/schemas/sampling.ts";
import type { ChatRequest } from "./chat/types.ts";

/** Request fields that shape the sampled distribution, recorded when sent. */
const RECORDED_PARAMS = [
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "max_tokens",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "min_tokens",
  "ignore_eos",
  "reasoning_effort",
] as const;

export function applyTaskSampling(
  chat: ChatRequest,
  task: AgentSampling | null | undefined,
): { chat: ChatRequest; overrides: string[] } {
  if (!task) return { chat, overrides: [] };
  const out: ChatRequest = { ...chat };
  const overrides: string[] = [];
  for (const param of OVERRIDDEN_SAMPLING_PARAMS) {
    const value = task[param];
    if (value === undefined) continue;
    // A number for the sampling params, a string for cache_salt (an engine flag of ChatRequest).
    (out as Record<string, unknown>)[param] = value;
    overrides.push(param);
  }
  const cap = task.max_tokens;
  if (cap !== undefined && (typeof out.max_tokens !== "number" || out.max_tokens > cap)) {
    out.max_tokens = cap;
    overrides.push("max_tokens");
  }
  return { chat: out, overrides };
}

export function samplingRecord(
  sent: ChatRequest,
  overrides: string[],
  logprobsMode: LogprobsMode,
): CaptureSampling {
  const params: CaptureSampling["params"] = {};
  for (const param of RECORDED_PARAMS) {
    const v = sent[param];
    if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") params[param] = v;
  }
  return { params, task_overrides: overrides, logprobs_mode: logprobsMode };
}

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

/**
 * Non-scalar request fields that reshape the sampled distribution (bias, masks, grammars, a forced
 * tool call): vLLM's raw logprobs are taken before them, so a trainer's logprob check must see them
 * (python `adapters/behaviour_logprobs.py`, `RESHAPING`). Recorded as a short string, since the
 * record holds scalars: the JSON of a list or map, a response format's `type`, `function` for a
 * named tool choice.
 */
const RECORDED_SETTINGS = [
  "typical_p",
  "logit_bias",
  "bad_words",
  "allowed_token_ids",
  "logits_processors",
  "structured_outputs",
  "guided_json",
  "guided_regex",
  "guided_choice",
  "guided_grammar",
  "response_format",
  "tool_choice",
] as const;

function settingValue(
  name: (typeof RECORDED_SETTINGS)[number],
  v: unknown,
): string | number | boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") return v;
  if (name === "response_format") return String((v as { type?: unknown }).type ?? "object");
  if (name === "tool_choice") return "function";
  const json = JSON.stringify(v);
  // An empty bias or word list reshapes nothing: recorded, it would read as a setting in effect.
  if (json === "{}" || json === "[]") return undefined;
  // A schema can be large; what the check needs is that the setting was there.
  return json.length > 200 ? `${json.slice(0, 200)}...` : json;
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
  for (const name of RECORDED_SETTINGS) {
    const v = settingValue(name, sent[name]);
    if (v !== undefined) params[name] = v;
  }
  return { params, task_overrides: overrides, logprobs_mode: logprobsMode };
}

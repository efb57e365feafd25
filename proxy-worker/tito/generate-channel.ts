/**
 * vLLM's native token-in, token-out endpoint, `POST /inference/v1/generate` (server started with
 * `--enable-scale-out`; vLLM >= 0.32): the prompt is the ids, nothing is rendered, and the answer
 * reports which weight version sampled each output token (`weight_versions` spans). As on
 * `/v1/completions`, the answer is parsed by the proxy (parsed-answer.ts).
 * Request and answer: vllm/entrypoints/scale_out/token_in_token_out/protocol.py.
 */
import type { ChatRequest } from "../chat/types.ts";
import { isObject, isTokenIdArray } from "../engines/engine.ts";
import { postJson, type Upstream, type UpstreamResult } from "../upstream.ts";
import type { OutputParser } from "./output-parsers.ts";
import { parsedChatCompletion, samplingOf } from "./parsed-answer.ts";

export const GENERATE_PATH = "/inference/v1/generate";

export function generateRequest(chat: ChatRequest, ids: number[]): Record<string, unknown> {
  const sampling = samplingOf(chat);
  // `logprobs: 0` returns the sampled token's logprob; more asks for alternatives too.
  sampling.logprobs = typeof chat.top_logprobs === "number" ? chat.top_logprobs : 0;
  return { model: chat.model, token_ids: ids, sampling_params: sampling, output_mode: "text" };
}

/** The generate answer as the chat completion vLLM's parsers would have made of it. */
export function chatFromGenerate(
  res: UpstreamResult,
  ids: number[],
  parser: OutputParser,
  thinking: boolean,
): UpstreamResult {
  if (!res.ok) return res;
  const choice = Array.isArray(res.body.choices) ? res.body.choices[0] : undefined;
  if (!isObject(choice) || typeof choice.text !== "string" || !isTokenIdArray(choice.token_ids)) {
    return {
      ok: false,
      status: 502,
      message: `upstream ${GENERATE_PATH} answer has no choices[0].text and token_ids`,
    };
  }
  return parsedChatCompletion(
    {
      status: res.status,
      id: `chatcmpl-${typeof res.body.request_id === "string" ? res.body.request_id : "generate"}`,
      created: res.body.created,
      model: res.body.model,
      text: choice.text,
      finishReason: choice.finish_reason,
      stopReason: choice.stop_reason,
      logprobs: chatLogprobs(choice.logprobs),
      usage: res.body.usage,
      // Per-token versions, read by engines/vllm.ts.
      choiceExtras: {
        token_ids: choice.token_ids,
        ...(Array.isArray(choice.weight_versions) ? { weight_versions: choice.weight_versions } : {}),
      },
      // The endpoint's prompt is the ids by contract (it renders nothing and does not echo them).
      rootExtras: { prompt_token_ids: ids },
    },
    parser,
    thinking,
  );
}

/** `logprobs.content[]` entries carry `token_id` and `logprob`; chat's carry `token` and `logprob`. */
function chatLogprobs(lp: unknown): { content: { token: string; logprob: number }[] } | null {
  if (!isObject(lp) || !Array.isArray(lp.content)) return null;
  return {
    content: lp.content.map((e) => ({
      token: isObject(e) && typeof e.token === "string" ? e.token : "",
      logprob: isObject(e) && typeof e.logprob === "number" ? e.logprob : Number.NaN,
    })),
  };
}

/**
 * Whether the engine serves the endpoint: an empty body is refused 400 (validation) by an engine
 * that has it, 403 when started without `--enable-scale-out`, 404 by one without the route.
 */
export async function probeGenerate(up: Upstream): Promise<boolean> {
  const res = await postJson({ ...up, log: undefined, timeoutMs: 5_000 }, GENERATE_PATH, {});
  return !res.ok && (res.status === 400 || res.status === 422);
}

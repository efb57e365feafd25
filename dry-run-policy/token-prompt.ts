/**
 * Token-id prompts on the channels the engines offer (docs/tito.md): SGLang chat `input_ids`,
 * vLLM chat `kv_transfer_params.prompt_token_ids`. Like the engines, such a prompt skips the
 * template; the messages still decide the scripted turn. Ids outside the vocabulary are refused.
 */
import { PolicyRequestError } from "./errors.ts";
import type { ChatCompletionRequest } from "./request-schema.ts";

/** The request's token prompt and where it came from, or null when it has none. */
export function tokenPromptOf(
  request: ChatCompletionRequest,
  vocabSize: number,
): { ids: number[]; param: string } | null {
  const sglang = request.input_ids;
  const vllm = request.kv_transfer_params?.prompt_token_ids;
  const found = sglang
    ? { ids: sglang, param: "input_ids" }
    : vllm
      ? { ids: vllm, param: "kv_transfer_params.prompt_token_ids" }
      : null;
  if (!found) return null;
  if (found.ids.length === 0) throw new PolicyRequestError(`${found.param} is empty`, { param: found.param });
  const bad = found.ids.find((id) => id >= vocabSize);
  if (bad !== undefined) {
    throw new PolicyRequestError(
      `token id ${bad} in ${found.param} is out of vocabulary (size ${vocabSize})`,
      {
        param: found.param,
      },
    );
  }
  return found;
}

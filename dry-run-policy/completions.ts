/**
 * `POST /v1/completions` with a token-id prompt, as vLLM serves it: the path a proxy takes to
 * send token prompts to a vLLM without chat `kv_transfer_params.prompt_token_ids` (docs/tito.md).
 * The dry-run policy reads the conversation back out of the Qwen3-rendered prompt (its script,
 * the turns taken, the tools offered), plans the turn as for chat, and answers with raw text: the
 * caller parses reasoning and tool calls itself.
 */
import { z } from "zod";
import type { Qwen3 } from "../shared/node/qwen3/qwen3.ts";
import { assistantText } from "./assistant-text.ts";
import { PolicyRequestError } from "./errors.ts";
import { dryRunLogprob } from "./logprobs.ts";
import { planTurn } from "./plan-turn.ts";
import type { OfferedTool } from "./shell-tool.ts";

export const CompletionRequestSchema = z.looseObject({
  model: z.string().nullish(),
  prompt: z.union([z.array(z.number().int().min(0)).min(1), z.string()]),
  max_tokens: z.number().int().min(1).nullish(),
  logprobs: z.number().int().min(0).max(20).nullish(),
  return_token_ids: z.boolean().nullish(),
  stream: z.boolean().nullish(),
});
export type CompletionRequest = z.infer<typeof CompletionRequestSchema>;

const EMPTY_THINK = "<think>\n\n</think>\n\n";

interface PromptTurn {
  role: string;
  content: string;
}

/** The `<|im_start|>role\ncontent<|im_end|>` turns of a rendered Qwen3 prompt. */
function turnsOf(text: string): PromptTurn[] {
  return text
    .split("<|im_start|>")
    .slice(1)
    .map((seg) => {
      const nl = seg.indexOf("\n");
      const body = seg.slice(nl + 1);
      const end = body.indexOf("<|im_end|>");
      return { role: seg.slice(0, nl), content: end < 0 ? body : body.slice(0, end) };
    });
}

/** The tools the Qwen3 template lists in the system turn (one JSON object a line). */
function toolsOf(system: string | undefined): OfferedTool[] {
  const m = system ? /<tools>\n([\s\S]*?)\n<\/tools>/.exec(system) : null;
  if (!m) return [];
  return m[1].split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line) as OfferedTool];
    } catch {
      return [];
    }
  });
}

export function completionBody(
  q: Qwen3,
  request: CompletionRequest,
  maxModelLen: number,
  model: string,
  sessionId?: string,
) {
  if (typeof request.prompt === "string") {
    throw new PolicyRequestError("the dry-run policy completes token-id prompts only", { param: "prompt" });
  }
  if (request.stream) throw new PolicyRequestError("stream is not supported here", { param: "stream" });
  const promptIds = request.prompt;
  const bad = promptIds.find((id) => id >= q.vocabSize);
  if (bad !== undefined) {
    throw new PolicyRequestError(`token id ${bad} in prompt is out of vocabulary (size ${q.vocabSize})`, {
      param: "prompt",
    });
  }
  if (promptIds.length >= maxModelLen) {
    throw new PolicyRequestError(
      `the prompt has ${promptIds.length} tokens, max_model_len is ${maxModelLen}`,
      {
        param: "prompt",
      },
    );
  }
  const text = q.decode(promptIds);
  const turns = turnsOf(text);
  // The last turn is the open generation prompt; everything before it is the conversation.
  const messages = turns.slice(0, -1).map((t) => ({ role: t.role as "user", content: t.content }));
  const system = turns.find((t) => t.role === "system")?.content;
  const turn = planTurn({ messages, tools: toolsOf(system), sessionId });
  const sampledText = assistantText(turn, {
    toJson: q.toJson,
    thinking: !text.endsWith(EMPTY_THINK),
    endToken: "<|im_end|>",
  });
  const sampled = q.encode(sampledText);
  const budget = Math.min(request.max_tokens ?? Number.POSITIVE_INFINITY, maxModelLen - promptIds.length);
  const ids = sampled.length > budget ? sampled.slice(0, budget) : sampled;
  const outText =
    ids.filter((id) => !q.isSpecial(id)).length === 0 ? "" : q.decode(ids.filter((id) => !q.isSpecial(id)));
  const withIds = request.return_token_ids === true;
  const logprobs =
    request.logprobs === null || request.logprobs === undefined
      ? null
      : {
          tokens: ids.map((id) => q.decode([id])),
          token_logprobs: ids.map((id, i) => dryRunLogprob(id, i)),
          top_logprobs: null,
          text_offset: null,
        };
  return {
    id: `cmpl-dryrun${promptIds.length}`,
    object: "text_completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        text: outText,
        logprobs,
        finish_reason: ids.length < sampled.length ? "length" : "stop",
        stop_reason: null,
        ...(withIds ? { prompt_token_ids: promptIds, token_ids: ids } : {}),
      },
    ],
    usage: {
      prompt_tokens: promptIds.length,
      completion_tokens: ids.length,
      total_tokens: promptIds.length + ids.length,
    },
  };
}

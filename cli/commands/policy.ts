import { DEFAULT_MAX_MODEL_LEN } from "../../dry-run-policy/defaults.ts";
import { isPolicyShape, POLICY_SHAPES } from "../../dry-run-policy/shapes.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags, untilSignal } from "../flags.ts";

const usage = `Usage: polar policy [--port 8000] [--host 127.0.0.1] [--max-model-len 131072] [--model NAME]
                    [--shape ${POLICY_SHAPES.join("|")}] [--weight-version V]
                    [--tokens-per-second N] [--drop-tool-call-ids]
                    [--prefix-cache-tokens N] [--prefill-tokens-per-second R]

The dry-run policy: a vLLM-shaped OpenAI-compatible server with the real Qwen3 tokenizer and
chat template that follows a \`polar-script\` block in the first user message. Runs until
SIGINT/SIGTERM. See docs/dry-run-policy.md.

  --shape           answer layout: vllm (default); sglang (newest SGLang: response_token_ids,
                    meta_info, sglext ids); sglang-token-ids (SGLang PR #30917);
                    sglang-meta-info (older SGLang: ids only in meta_info); see docs/engines.md
  --weight-version  the weight version SGLang shapes report (default "default"; changed by
                    POST /update_weight_version)
  --tokens-per-second N
                    pace answers: each streamed chunk goes out when its tokens would have been
                    sampled at N tokens/s, a whole answer when its last token would have
                    (default: as fast as possible)
  --drop-tool-call-ids  reproduce vllm#27482: streamed chunks with tool-call deltas carry no
                    token_ids (for testing the proxy's ids_incomplete check)
  --prefix-cache-tokens N
                    model a prefix cache of N tokens (16-token blocks, LRU) and report
                    usage.prompt_tokens_details.cached_tokens as vLLM does
  --prefill-tokens-per-second R
                    delay each answer by its uncached prompt tokens / R, queued per server
                    (default 0: no delay)`;

function positiveInt(flag: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > 2 ** 31) {
    throw new UsageError(`--${flag} expects an integer >= ${min}, got ${JSON.stringify(value)}`);
  }
  return n;
}

const command: Command = {
  summary: "the dry-run policy: a vLLM-shaped server with a real tokenizer following scripted actions",
  usage,
  async run(argv) {
    const { values } = parseFlags({
      args: argv,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        "max-model-len": { type: "string" },
        model: { type: "string" },
        shape: { type: "string" },
        "weight-version": { type: "string" },
        "tokens-per-second": { type: "string" },
        "drop-tool-call-ids": { type: "boolean" },
        "prefix-cache-tokens": { type: "string" },
        "prefill-tokens-per-second": { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    });
    const port = positiveInt("port", values.port, 8000, 0);
    if (port > 65535) throw new UsageError(`--port expects 0..65535, got ${port}`);
    const maxModelLen = positiveInt("max-model-len", values["max-model-len"], DEFAULT_MAX_MODEL_LEN, 2);
    const shape = values.shape ?? "vllm";
    if (!isPolicyShape(shape)) {
      throw new UsageError(
        `--shape must be one of ${POLICY_SHAPES.join(", ")}, got ${JSON.stringify(shape)}`,
      );
    }
    const tps = values["tokens-per-second"];
    const tokensPerSecond = tps === undefined ? undefined : positiveInt("tokens-per-second", tps, 0, 1);
    const prefixCacheTokens =
      values["prefix-cache-tokens"] === undefined
        ? undefined
        : positiveInt("prefix-cache-tokens", values["prefix-cache-tokens"], 0, 0);
    const prefillTokensPerSecond = positiveInt(
      "prefill-tokens-per-second",
      values["prefill-tokens-per-second"],
      0,
      0,
    );
    const { startPolicyServer } = await import("../../dry-run-policy/server.ts");
    const server = await startPolicyServer({
      host: values.host,
      port,
      maxModelLen,
      modelName: values.model,
      shape,
      weightVersion: values["weight-version"],
      tokensPerSecond,
      dropToolCallIds: values["drop-tool-call-ids"] === true,
      prefixCacheTokens,
      prefillTokensPerSecond,
    });
    console.log(
      `polar policy: listening on ${server.url} (OpenAI base URL ${server.url}/v1, ${shape} shape)`,
    );
    await untilSignal();
    await server.close();
    return 0;
  },
};

export default command;

/**
 * Answer layouts the dry-run policy can speak, so the proxy's engine adapters run against each
 * (docs/engines.md has the version matrix). No imports, so `polar --help` stays light.
 *
 * - `vllm`: vLLM >= 0.10.2 (`return_token_ids` -> root `prompt_token_ids`, per-choice `token_ids`).
 * - `sglang`: the newest SGLang `serving_chat.py` (per-choice `prompt_token_ids` and
 *   `response_token_ids` for `return_token_ids`, `meta_info` for `return_meta_info`, `sglext`
 *   `input_ids`/`output_ids` for the `return_*_ids_in_sglext` flags, `metadata.weight_version`).
 * - `sglang-token-ids`: SGLang after PR #30917 (per-choice `prompt_token_ids` and `token_ids`).
 * - `sglang-meta-info`: SGLang before PR #30917 (no response id field: sampled ids only in
 *   `meta_info.output_token_logprobs`, prompt ids for `return_prompt_token_ids`).
 */
export const POLICY_SHAPES = ["vllm", "sglang", "sglang-token-ids", "sglang-meta-info"] as const;
export type PolicyShape = (typeof POLICY_SHAPES)[number];

export function isPolicyShape(x: string): x is PolicyShape {
  return (POLICY_SHAPES as readonly string[]).includes(x);
}

/** SGLang's weight version before any `/update_weight_version` (its server default). */
export const DEFAULT_WEIGHT_VERSION = "default";

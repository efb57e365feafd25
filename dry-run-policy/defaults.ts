/** Defaults of the dry-run policy, in a module with no imports so `polar --help` stays light. */

/**
 * Qwen3's YaRN-extended window (tokenizer_config's model_max_length). A plain vLLM Qwen3
 * deployment says 40960, but harnesses ask for 32000 output tokens on top of 15-20k-token
 * system prompts, which vLLM would refuse; the dry-run should not be the thing that fails.
 */
export const DEFAULT_MAX_MODEL_LEN = 131072;
export const DEFAULT_MODEL_NAME = "polar/dry-run-qwen3";

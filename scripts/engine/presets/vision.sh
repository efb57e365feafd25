# Preset `vision`: a tiny random-weight Idefics3-shaped vision model (SigLIP tower, Llama text model)
# on the Qwen tokenizer plus its image tokens (scripts/engine/make_tiny_vision.py).
preset_served_name=tiny-vision
preset_model_dir="$root/.cache/engine/tiny-vision"
preset_max_model_len=8192
# Hermes <tool_call> JSON; our template has no think tags: no reasoning parser. Images only, a few a
# prompt: vLLM sizes its encoder cache for that many.
preset_flags=(--enable-auto-tool-choice --tool-call-parser hermes --limit-mm-per-prompt '{"image": 8}')
preset_env=()
preset_build() {
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/scripts/engine/make_tiny_vision.py" "$1"
}

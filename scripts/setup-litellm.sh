#!/usr/bin/env bash
# LiteLLM's proxy for `npm run bench -- peers` only (a peer to compare against, never a dependency
# of Polar): its own venv (.venv-litellm, gitignored), apart from .venv, so its pins cannot move
# the trainer side's packages. The benchmark skips LiteLLM, saying why, when this venv is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
# 1.100.5: its `proxy` extra resolves from the index this project uses (1.104.9 pins a litellm-proxy-extras build
# the index lacks; 1.110 moved the proxy into a separate litellm-proxy package); never 1.107.0,
# the release that was compromised.
version=${LITELLM_VERSION:-1.100.5}
[ -x .venv-litellm/bin/pip ] || "$python" -m venv --clear .venv-litellm
.venv-litellm/bin/pip install --quiet --disable-pip-version-check "litellm[proxy]==$version"
.venv-litellm/bin/litellm --version

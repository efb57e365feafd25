#!/usr/bin/env bash
# A Python 3.12 venv with one environment ecosystem's real package, for the tests that run it
# against Polar: `nemo-gym` (nemo-gym 0.4.0) or `verifiers` (verifiers 0.4.0), in
# .cache/<name> (gitignored). Each gets its own venv: their pins (openai, pydantic, ...) differ.
# polar_rollouts itself is not installed: the tests put python/src on PYTHONPATH, so they always
# run the checkout's code; the venv gets the package's two dependencies (numpy, pyarrow).
# Idempotent: a venv whose package imports at the pinned version is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

name=${1:?usage: setup-ecosystem-venv.sh nemo-gym|verifiers}
case "$name" in
  nemo-gym) spec=nemo-gym==0.4.0 module=nemo_gym dist=nemo-gym ;;
  verifiers) spec=verifiers==0.4.0 module=verifiers dist=verifiers ;;
  *) echo "unknown ecosystem $name (nemo-gym or verifiers)" >&2; exit 2 ;;
esac
venv=.cache/$name
want=${spec#*==}

check() {
  "$venv/bin/python" - "$dist" "$want" "$module" <<'PY' 2>/dev/null
import importlib, importlib.metadata as md, sys
dist, want, module = sys.argv[1:]
assert md.version(dist) == want, md.version(dist)
importlib.import_module(module); import numpy, pyarrow  # noqa: E401
PY
}
if [ -x "$venv/bin/python" ] && check; then
  exit 0
fi

# Python >= 3.12 (nemo-gym requires it): $PYTHON312, python3.12 on PATH, or pyenv's 3.12.
python=${PYTHON312:-}
if [ -z "$python" ]; then
  if command -v python3.12 >/dev/null; then python=python3.12
  elif command -v pyenv >/dev/null && pyenv prefix 3.12.1 >/dev/null 2>&1; then python="$(pyenv prefix 3.12.1)/bin/python3"
  else echo "no Python 3.12 (set PYTHON312, or install python3.12)" >&2; exit 1
  fi
fi
started=$SECONDS
"$python" -m venv --clear "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$spec" numpy pyarrow
check || { echo "$spec installed but does not import" >&2; exit 1; }
echo "$name venv ready in $((SECONDS - started)) s: $venv" >&2

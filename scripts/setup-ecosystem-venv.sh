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

# Python >= 3.12 (nemo-gym requires it): $PYTHON312, else the first of python3.12, python3 and
# pyenv's newest 3.12 that runs and is new enough (a pyenv shim may exist yet refuse to run).
pyenv_312=""
if command -v pyenv >/dev/null; then
  v=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.|$)' | tail -1 || true)
  [ -n "$v" ] && pyenv_312="$(pyenv prefix "$v")/bin/python3"
fi
python=""
for candidate in "${PYTHON312:-}" python3.12 python3 "$pyenv_312"; do
  if [ -n "$candidate" ] && "$candidate" -c 'import sys, venv; assert sys.version_info >= (3, 12)' 2>/dev/null; then
    python=$candidate
    break
  fi
done
[ -n "$python" ] || { echo "no Python >= 3.12 with venv (set PYTHON312, or install python3.12)" >&2; exit 1; }
started=$SECONDS
"$python" -m venv --clear "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$spec" numpy pyarrow
check || { echo "$spec installed but does not import" >&2; exit 1; }
echo "$name venv ready in $((SECONDS - started)) s: $venv" >&2

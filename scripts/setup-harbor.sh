#!/usr/bin/env bash
# Harbor (the real package, for its task scaffolding and ATIF models in the tests) in a Python 3.12
# venv under .cache/harbor (gitignored). Idempotent: a venv that already imports harbor is kept.
# harbor 0.25.0 needs Python >= 3.12: set PYTHON, or have pyenv's 3.12.1, or a python3.12 on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.cache/harbor
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import harbor' 2>/dev/null; then exit 0; fi
python=${PYTHON:-}
if [ -z "$python" ] && command -v pyenv >/dev/null && [ -x "$(pyenv prefix 3.12.1 2>/dev/null)/bin/python3" ]; then
  python="$(pyenv prefix 3.12.1)/bin/python3"
fi
[ -n "$python" ] || python=$(command -v python3.12 || true)
[ -n "$python" ] || { echo "setup-harbor: no Python 3.12 (set PYTHON)" >&2; exit 1; }
"$python" -m venv --clear "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check harbor==0.25.0
"$venv/bin/python" -c 'import harbor' && echo "harbor ready in $venv"

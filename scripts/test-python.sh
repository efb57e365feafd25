#!/usr/bin/env bash
# The pytest suite (python/tests). Exit code 5 (no test collected) fails like any other failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# The first run on a machine makes the venv (scripts/setup-python.sh, once), so a fresh clone
# needs only `npm ci` and `npm test`.
# A venv made before the trainer plug-ins lacks verl's agent-loop dependencies, one made before
# the suite ran in two workers lacks pytest-xdist: made again too.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import polar_rollouts, torch, verl.experimental.agent_loop.agent_loop, transfer_queue, xdist' 2>/dev/null; then
  echo "python side: setting up .venv (scripts/setup-python.sh, once per checkout)" >&2
  bash scripts/setup-python.sh
fi
# The suite tests the package as `pip install ./python` builds it, so the current sources are
# built and installed first (no dependencies, no network: hatchling comes with the [test] extra).
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall ./python
export HF_HUB_OFFLINE=1 POLAR_REQUIRE_TRAINERS=1
# Two workers, each taking whole files (a file's module fixtures, engines among them, start once):
# 8.5 min against 11.8 in one process on 2 cores (BENCHMARKS.md "The suite"). `-n 0` after it
# runs in one process.
exec .venv/bin/python -m pytest python/tests -q -p no:cacheprovider -n 2 --dist loadfile "$@"

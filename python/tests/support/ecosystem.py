"""The venv of an environment ecosystem's real package (scripts/setup-ecosystem-venv.sh, the one
the TypeScript integration tests use): made on first use, skipped with the reason where it cannot
be made, except under CI=true, where that is a failure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

QUIET = {
    "PYTHONPATH": str(ROOT / "python" / "src"),
    "DO_NOT_TRACK": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "HF_HUB_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "PYTHONUNBUFFERED": "1",
}


def ecosystem_venv(name: str) -> Path:
    made = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-ecosystem-venv.sh"), name], capture_output=True, text=True, timeout=900
    )
    if made.returncode != 0:
        reason = f"scripts/setup-ecosystem-venv.sh {name} failed: {made.stderr.strip()[-400:]}"
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"the {name} venv is required under CI but: {reason}")
        pytest.skip(reason)
    return ROOT / ".cache" / name


def env_of(**extra: str) -> dict[str, str]:
    return {**os.environ, **QUIET, **extra}

"""Whether the real-engine lane runs here: the skip every test that starts vLLM shares.

As the vitest engine tests (test/support/real-engine.ts): under CI or POLAR_REQUIRE_ENGINE=1 a
missing lane is not a skip (.ci/run sets it up with scripts/engine.sh), so such a test fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ENGINE_PYTHON = ROOT / ".venv-engine" / "bin" / "python"
REQUIRED = bool(os.environ.get("CI")) or os.environ.get("POLAR_REQUIRE_ENGINE") == "1"

needs_engine_lane = pytest.mark.skipif(
    not REQUIRED and (not ENGINE_PYTHON.exists() or shutil.which("node") is None),
    reason="needs the real-engine lane (.venv-engine: `bash scripts/engine.sh setup`) and node on PATH",
)

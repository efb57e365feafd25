"""Puts python/tests/vendor (slime and NeMo RL functions at a pinned commit, see
scripts/vendor-trainer-sources.py) on the import path, for the tests that run them."""

from __future__ import annotations

import sys
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "vendor"
if str(VENDOR) not in sys.path:
    sys.path.insert(0, str(VENDOR))

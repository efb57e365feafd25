"""``python -m polar_rollouts.nemo_gym_root``: the root to give NeMo Gym (``NEMO_GYM_EXTRA_ROOTS``)."""

from __future__ import annotations

from . import ROOT

if __name__ == "__main__":
    print(ROOT)

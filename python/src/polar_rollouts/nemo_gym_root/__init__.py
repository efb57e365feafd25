"""A NeMo Gym component root holding Polar's agent server directory, so NeMo Gym (``ng_run``, and
NeMo RL's NeMo Gym environment, which calls the same ``RunHelper.start``) starts Polar's agent from
configuration alone: ``responses_api_agents/polar_agent/`` has what NeMo Gym needs of a server
directory (``requirements.txt`` for the venv it makes, the ``app.py`` entrypoint it runs, and
``configs/polar_agent.yaml`` for ``config_paths``). NeMo Gym looks a server directory up by its
relative path under its component roots: ``$NEMO_GYM_EXTRA_ROOTS`` (NeMo Gym 0.5, the one NeMo RL
pins), the working directory, then its own install root. ``python -m polar_rollouts.nemo_gym_root``
prints this root."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
AGENT_DIR = ROOT / "responses_api_agents" / "polar_agent"
CONFIG_PATH = "responses_api_agents/polar_agent/configs/polar_agent.yaml"

__all__ = ["AGENT_DIR", "CONFIG_PATH", "ROOT"]

"""NeMo Gym's entrypoint for Polar's agent server (``entrypoint: app.py``): NeMo Gym runs it with
this directory as the working directory, in the venv it made from requirements.txt. The
polar_rollouts this file belongs to goes first on the path, so the agent is the same code as the
package it was shipped in, whatever else that venv holds."""

import sys
from pathlib import Path

# app.py -> polar_agent -> responses_api_agents -> nemo_gym_root -> polar_rollouts -> its parent
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from polar_rollouts.nemo_gym_root.launch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

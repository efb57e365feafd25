"""NeMo Gym's entrypoint for Polar's agent server (``entrypoint: app.py``): NeMo Gym runs it with
this directory as the working directory, in the venv it made from requirements.txt. The agent is
the polar_rollouts this file was shipped in, whatever else that venv holds, loaded from its own
folder alone: putting that folder's parent on the path would put a whole site-packages first when
the package is installed, and another Python's numpy from it fails to import (seen with the
package installed in a 3.11 venv and NeMo Gym's venv on 3.12). Its dependencies come from this
venv."""

import importlib.util
import sys
from pathlib import Path

# app.py -> polar_agent -> responses_api_agents -> nemo_gym_root -> polar_rollouts
PACKAGE = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location(
    "polar_rollouts", PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
)
assert spec is not None and spec.loader is not None
package = importlib.util.module_from_spec(spec)
sys.modules["polar_rollouts"] = package
spec.loader.exec_module(package)

from polar_rollouts.nemo_gym_root.launch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

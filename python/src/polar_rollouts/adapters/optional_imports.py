"""Trainer packages the adapters import only when called, and the error that says how to get them.

``pip install ./python`` installs the reader alone (numpy, pyarrow); a bare
``ModuleNotFoundError: datasets`` would not say that the ``[trl]`` extra holds it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: What to run for each extra (pyproject.toml ``[project.optional-dependencies]``). verl itself is
#: installed apart: its own pins would replace torch and transformers (docs/trainers.md).
INSTALL_HINTS = {
    "trl": "pip install './python[trl]'",
    "images": "pip install './python[images]'",
    "torch": "pip install './python[torch]'",
    "verl": "pip install './python[torch,verl]', then pip install --no-deps verl==0.9.1 (docs/trainers.md)",
}


def import_extra(module: str, *, extra: str, needed_by: str) -> ModuleType:
    """``module``, or an ImportError naming ``needed_by`` and the extra that installs it. A missing
    module deeper inside (a dependency of ``module`` itself) is re-raised as it is."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if missing != module and not module.startswith(f"{missing}."):
            raise
        raise ImportError(
            f"{needed_by} needs the '{missing}' package, which `pip install ./python` does not install: "
            f"{INSTALL_HINTS[extra]}"
        ) from err

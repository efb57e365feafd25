"""The TRL the plug-in is written against, checked when ``polar_rollouts.plugins.trl`` is imported.

The plug-in drives TRL through names TRL keeps private (issue 48 item 7): it sets ``use_vllm``
and ``vllm_generation`` on the ``GRPOTrainer`` so that TRL's importance-sampling correction and
its pre-generation weight sync (``vllm_generation.sync_weights()``, gated on
``_last_loaded_step``) run against Polar's engines. A TRL that renamed any of them would train
without the correction or the weight sync, and say nothing. So at import the installed TRL must
be in ``SUPPORTED`` and its ``GRPOTrainer`` must still use each name where the plug-in relies on
it (read from the compiled methods, not the version string alone); otherwise the import fails
with ``TrlIncompatible`` naming the range and what is missing.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from types import CodeType
from typing import Any

from ..adapters.optional_imports import import_extra

SUPPORTED = ((1, 16), (2, 0))  # >= 1.16, < 2.0
SUPPORTED_TEXT = "trl>=1.16,<2.0"

# Each use the plug-in relies on: one GRPOTrainer method must name all of these together.
USES: dict[str, tuple[str, ...]] = {
    "__init__ keeps rollout_func and use_vllm": ("rollout_func", "use_vllm"),
    "the rollout_func path syncs weights through vllm_generation first": (
        "rollout_func",
        "use_vllm",
        "_last_loaded_step",
        "vllm_generation",
        "sync_weights",
    ),
    "the loss corrects with the sampler's logprobs": ("use_vllm", "vllm_importance_sampling_correction"),
}


class TrlIncompatible(ImportError):
    """The installed TRL is not one the plug-in works with; the message names the range."""


def version_tuple(version: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None:
        raise TrlIncompatible(f"cannot read TRL's version {version!r}; the Polar plug-in supports {SUPPORTED_TEXT}")
    return int(found.group(1)), int(found.group(2))


def _names(code: CodeType) -> Iterator[str]:
    yield from code.co_names
    yield from code.co_varnames
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _names(const)


def missing_uses(trainer_class: type) -> list[str]:
    """The relied-on uses no method of ``trainer_class`` (its MRO included) still makes."""
    named = []
    for _, fn in inspect.getmembers(trainer_class, inspect.isfunction):
        code = getattr(fn, "__code__", None)
        if code is not None:
            named.append(set(_names(code)))
    return [what for what, names in USES.items() if not any(set(names) <= n for n in named)]


def check(trl: Any, trainer_class: type) -> None:
    version = str(getattr(trl, "__version__", "unknown"))
    have = version_tuple(version)
    low, high = SUPPORTED
    if not low <= have < high:
        raise TrlIncompatible(
            f"polar_rollouts.plugins.trl supports {SUPPORTED_TEXT}; TRL {version} is installed "
            f"(pip install '{SUPPORTED_TEXT}')"
        )
    missing = missing_uses(trainer_class)
    if missing:
        raise TrlIncompatible(
            f"polar_rollouts.plugins.trl: TRL {version}'s GRPOTrainer no longer does what the plug-in relies on "
            f"({'; '.join(missing)}); the plug-in is checked against {SUPPORTED_TEXT}, install one of those"
        )


def check_installed() -> None:
    trl = import_extra("trl", extra="trl", needed_by="polar_rollouts.plugins.trl")
    grpo = import_extra("trl.trainer.grpo_trainer", extra="trl", needed_by="polar_rollouts.plugins.trl")
    check(trl, grpo.GRPOTrainer)

"""The TRL plug-in refuses, at import, a TRL outside the range it is written against or one whose
GRPOTrainer no longer uses the private names the plug-in sets (issue 48 item 7)."""

from __future__ import annotations

import types

import pytest
from conftest import trainer_module

from polar_rollouts.plugins import trl_compat

trl = trainer_module("trl", "pip install 'polar-rollouts[trl]'")
grpo = trainer_module("trl.trainer.grpo_trainer", "pip install 'polar-rollouts[trl]'")


def renamed(cls: type, old: str, new: str) -> type:
    """``cls`` as a TRL release that renamed the attribute ``old`` to ``new`` would have it."""
    body = {}
    for name, fn in vars(cls).items():
        if isinstance(fn, types.FunctionType) and old in fn.__code__.co_names:
            code = fn.__code__.replace(co_names=tuple(new if n == old else n for n in fn.__code__.co_names))
            fn = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        body[name] = fn
    return type(cls.__name__, cls.__bases__, body)


def test_the_installed_trl_passes() -> None:
    trl_compat.check(trl, grpo.GRPOTrainer)
    assert trl_compat.missing_uses(grpo.GRPOTrainer) == []


@pytest.mark.parametrize("version", ["1.15.2", "2.0.0", "0.29.1"])
def test_a_trl_outside_the_range_is_refused_naming_it(version: str) -> None:
    with pytest.raises(trl_compat.TrlIncompatible, match=rf"supports trl>=1\.16,<2\.0; TRL {version} is installed"):
        trl_compat.check(types.SimpleNamespace(__version__=version), grpo.GRPOTrainer)


@pytest.mark.parametrize(
    ("old", "lost"),
    [
        ("vllm_generation", "syncs weights through vllm_generation"),
        ("_last_loaded_step", "syncs weights through vllm_generation"),
        ("vllm_importance_sampling_correction", "corrects with the sampler's logprobs"),
        ("use_vllm", "__init__ keeps rollout_func and use_vllm"),
    ],
)
def test_a_trl_that_renamed_what_the_plug_in_sets_is_refused(old: str, lost: str) -> None:
    changed = renamed(grpo.GRPOTrainer, old, f"{old}_v2")
    with pytest.raises(trl_compat.TrlIncompatible, match="no longer does what the plug-in relies on") as err:
        trl_compat.check(trl, changed)
    assert lost in str(err.value) and "trl>=1.16,<2.0" in str(err.value)


def test_importing_the_plug_in_runs_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setattr(trl, "__version__", "2.1.0")
    monkeypatch.delitem(sys.modules, "polar_rollouts.plugins.trl", raising=False)
    with pytest.raises(trl_compat.TrlIncompatible, match="TRL 2.1.0 is installed"):
        importlib.import_module("polar_rollouts.plugins.trl")
    monkeypatch.undo()
    sys.modules.pop("polar_rollouts.plugins.trl", None)
    importlib.import_module("polar_rollouts.plugins.trl")

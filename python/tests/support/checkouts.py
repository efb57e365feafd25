"""Trainers that no package registry serves (slime, NeMo RL), run from a clone the user names.

``checkout("POLAR_SLIME_CHECKOUT", ...)`` puts that clone first on the import path, or skips the
test with the reason and the commands that make one (also under scripts/test-python.sh: a
missing clone is the user's choice, not a broken install). Their modules import GPU-only
packages at the top (SGLang, Megatron, CUDA builds); ``stubbed`` answers those imports
with empty modules of ours, and a test sets on them the few values its code path reads (e.g.
a context-parallel size of 1). Nothing of the trainers' code is copied into this repository.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# GPU-only (or logging) packages slime's modules import at the top.
SLIME_STUBS = ("sglang", "sglang_router", "megatron", "wandb")
PINS = {
    "POLAR_SLIME_CHECKOUT": ("THUDM/slime", "624b824a898ab0ec1fcb4d373004c7f3852bf515"),
    "POLAR_NEMO_RL_CHECKOUT": ("NVIDIA-NeMo/RL", "7ea279abfbeb698b092856d0dab61e7cf39bc909"),
}


def checkout(env: str) -> Path:
    """The clone named by ``$env`` at its pinned commit, first on ``sys.path``; else a skip."""
    repo, commit = PINS[env]
    how = (
        f"set {env} to a clone of {repo} at {commit[:8]} "
        f"(git clone https://github.com/{repo} DIR && git -C DIR checkout {commit[:8]}; docs/trainers.md)"
    )
    where = os.environ.get(env)
    if not where:
        pytest.skip(f"{env} is not set: {how}", allow_module_level=True)
    path = Path(where).resolve()
    if not path.is_dir():
        pytest.skip(f"{env}={where} is not a directory: {how}", allow_module_level=True)
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0 or head.stdout.strip() != commit:
        # A clone at another commit would test other code than the adapter claims to match.
        pytest.fail(f"{env}={where} is at {head.stdout.strip() or 'no git commit'}, not {commit}: {how}")
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    return path


class _AnyMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _AnyMeta(name, (_Anything,), {})


class _Anything(metaclass=_AnyMeta):
    """What an attribute of a stubbed module is: callable, subclassable, usable as a decorator,
    with attributes of the same kind (``plt.Figure`` in an annotation)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else _Anything()

    def __getattr__(self, name: str) -> Any:
        return _Anything()


class _StubModule(ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _AnyMeta(name, (_Anything,), {})


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, packages: set[str]) -> None:
        self.packages = packages

    def covers(self, fullname: str) -> bool:
        return any(fullname == p or fullname.startswith(p + ".") for p in self.packages)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if self.covers(fullname):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: ModuleType) -> None:
        pass


@contextmanager
def stubbed(*packages: str, replace: tuple[str, ...] = (), **values: dict[str, Any]) -> Iterator[None]:
    """Inside: imports of ``packages`` (the ones not installed here) get empty modules, and so do
    those of ``replace`` (modules whose import-time code cannot run here);
    ``megatron__core__mpu={"get_context_parallel_world_size": lambda: 1}`` style keyword arguments
    (dots as ``__``) set what the tested code reads from them. On exit the stubs leave
    ``sys.modules`` and the import system (the modules imported inside keep their references), so
    nothing later in the session takes a stub for an installed package (transformers probes
    ``find_spec("scipy")``)."""
    missing = {p for p in packages if p not in sys.modules and importlib.util.find_spec(p) is None}
    missing |= set(replace)
    finder = _StubFinder(missing)
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if finder.covers(name)}
    sys.meta_path.insert(0, finder)
    try:
        for dotted, attrs in values.items():
            module = importlib.import_module(dotted.replace("__", "."))
            for name, value in attrs.items():
                setattr(module, name, value)
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if finder.covers(n)]:
            del sys.modules[name]
        sys.modules.update(saved)


@contextmanager
def nemo_rl_imports() -> Iterator[None]:
    """What importing NeMo RL's grpo module needs on this CPU venv (Python 3.11, transformers 5.x),
    none of it on the code path the tests run: its GPU and logging packages stubbed; pydantic's
    TypedDict rule of Python >= 3.12 (NeMo RL's floor) met with typing_extensions' TypedDict; and
    the transformers-version assert of its policy package's import-time tokenizer patch (a
    DeepSeek-V3 workaround) passed while that package is imported."""
    import typing

    import transformers
    import typing_extensions

    typed_dict, real = typing.TypedDict, transformers.__version__
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]
    try:
        with stubbed(
            *("megatron", "vllm", "nemo_gym", "wandb", "mlflow", "swanlab", "zmq", "matplotlib"),
            *("prometheus_client", "tensorboard", "soundfile", "scipy", "absl", "pynvml"),
            replace=("torch.utils.tensorboard",),
        ):
            transformers.__version__ = "5.11.0"
            try:
                importlib.import_module("nemo_rl.models.policy")
            finally:
                transformers.__version__ = real
            yield
    finally:
        typing.TypedDict = typed_dict  # type: ignore[misc]

"""A real vLLM (scripts/engine.sh serving a copy of an engine preset's model) with `polar serve
--upstream` in front of it, the stack examples/rl_on_cpu.py trains against and the TRL plug-in's
engine test and benchmark (python/tests/support/engine_stack.py) run on. The recipe lives in the
package (polar_rollouts.experiment.stack: the writable, untied checkpoint folder; both processes in
their own process groups, stopped with everything they started, also when this process is killed);
these are its defaults for the examples."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from polar_rollouts.experiment.stack import Stack, StackError, free_port, stop, wait_healthy
from polar_rollouts.experiment.stack import engine_only as _engine_only
from polar_rollouts.experiment.stack import engine_stack as _engine_stack
from polar_rollouts.experiment.stack import prepare_model_dir, preset_model_source

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / ".cache" / "engine" / "tiny-qwen3"

__all__ = ["ROOT", "TINY", "Stack", "StackError", "copy_preset_model", "copy_tiny_model", "engine_only",
           "engine_stack", "free_port", "stop", "wait_healthy"]  # fmt: skip


def copy_tiny_model(model_dir: Path) -> Path:
    """A fresh copy of the engine lane's model (made once, in seconds): each weight sync overwrites
    the weights file the engine reloads from."""
    return copy_preset_model(model_dir, "qwen3")


def copy_preset_model(model_dir: Path, preset: str) -> Path:
    """A fresh, writable, untied copy of an engine preset's model (scripts/engine/presets/<preset>.sh),
    built first when it is not there yet."""
    return prepare_model_dir(preset_model_source(ROOT, preset), model_dir, log=lambda _: None)


@contextmanager
def engine_stack(
    out: Path, model_dir: Path, *, seed: int = 0, run: int = 4, engine_port: int | None = None, preset: str = "qwen3"
) -> Iterator[Stack]:
    """vLLM (float32, processed logprobs, RL endpoints, no prefix cache) serving ``model_dir`` and
    `polar serve` (store ``out/store``) in front of it; ``engine_port`` when the caller needs the
    engine's address before it starts."""
    with _engine_stack(out, model_dir, root=ROOT, seed=seed, run=run, preset=preset, engine_port=engine_port or 0) as s:
        yield s


@contextmanager
def engine_only(out: Path, model_dir: Path, *, seed: int = 0, engine_port: int, preset: str = "qwen3") -> Iterator[str]:
    """The engine of ``engine_stack`` alone (same flags, DIR/engine.log), for a trainer whose
    proxies and runners already run (a fleet): yields the engine's URL, which the trainer then
    registers through a proxy's control API."""
    with _engine_only(out, model_dir, root=ROOT, seed=seed, preset=preset, engine_port=engine_port) as url:
        yield url

"""An experiment from one file: ``python -m polar_rollouts.experiment CONFIG.toml`` (or
``polar-train CONFIG.toml``); docs/experiments.md. The stack helpers are importable on their own:
``prepare_model_dir`` (the writable, untied checkpoint folder the trainer and the engine share) and
``engine_stack`` (vLLM and ``polar serve --out``, stopped with everything they started)."""

from .config import ConfigError, Experiment, load
from .stack import Stack, StackError, engine_stack, free_port, polar_root, prepare_model_dir, preset_model_source

__all__ = [
    "ConfigError",
    "Experiment",
    "Stack",
    "StackError",
    "engine_stack",
    "free_port",
    "load",
    "polar_root",
    "prepare_model_dir",
    "preset_model_source",
]

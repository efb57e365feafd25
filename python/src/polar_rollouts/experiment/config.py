"""The experiment file (docs/experiments.md): TOML, checked strictly before anything starts.

A hand-written schema rather than pydantic: the package's base install is numpy and pyarrow only,
and the checks are few. Every table is closed: an unknown key is an error naming its full path and
the nearest known key (``budget.max_step: unknown key (did you mean "max_steps"?)``); a wrong type
names the type wanted. ``[trainer.args]`` is open here and checked against the trainer's own
config class when the trainer is built (``GRPOConfig`` for ``kind = "trl"``).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRAINER_KINDS = ("trl",)


class ConfigError(ValueError):
    """The experiment file is wrong; the message names the file, the key and what to write."""


@dataclass(frozen=True)
class ModelConfig:
    preset: str | None
    path: Path | None
    checkpoint_dir: Path | None


@dataclass(frozen=True)
class EngineConfig:
    port: int
    startup_timeout_s: float
    extra_args: tuple[str, ...]


@dataclass(frozen=True)
class ServeConfig:
    run: int
    port: int
    group_timeout_s: float


@dataclass(frozen=True)
class TasksConfig:
    train: Path
    held_out: Path | None


@dataclass(frozen=True)
class TrainerConfig:
    kind: str
    args: dict[str, Any]


@dataclass(frozen=True)
class EvalConfig:
    every: int
    generations: int
    before_first_step: bool


@dataclass(frozen=True)
class BudgetConfig:
    max_steps: int
    minutes: float


@dataclass(frozen=True)
class RewardsConfig:
    process_weight: float


@dataclass(frozen=True)
class ChecksConfig:
    logprob_tolerance: float
    no_signal_steps: int


@dataclass(frozen=True)
class WarmupConfig:
    demonstrations: Path
    epochs: int
    learning_rate: float
    batch_size: int


@dataclass(frozen=True)
class Experiment:
    source: Path
    name: str
    seed: int
    out: Path
    model: ModelConfig
    engine: EngineConfig
    serve: ServeConfig
    tasks: TasksConfig
    trainer: TrainerConfig
    eval: EvalConfig
    budget: BudgetConfig
    rewards: RewardsConfig
    checks: ChecksConfig
    warmup: WarmupConfig | None = None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


# Each table's keys: name -> (types accepted, default; REQUIRED when there is none).
REQUIRED = object()
_NUM = (int, float)
SCHEMA: dict[str, dict[str, tuple[tuple[type, ...], Any]]] = {
    "": {
        "name": ((str,), None),
        "seed": ((int,), 0),
        "out": ((str,), REQUIRED),
        "model": ((dict,), REQUIRED),
        "engine": ((dict,), {}),
        "serve": ((dict,), {}),
        "tasks": ((dict,), REQUIRED),
        "trainer": ((dict,), REQUIRED),
        "eval": ((dict,), {}),
        "budget": ((dict,), {}),
        "rewards": ((dict,), {}),
        "checks": ((dict,), {}),
        "warmup": ((dict,), None),
    },
    "model": {"preset": ((str,), None), "path": ((str,), None), "checkpoint_dir": ((str,), None)},
    "engine": {"port": ((int,), 0), "startup_timeout_s": (_NUM, 300), "extra_args": ((list,), [])},
    "serve": {"run": ((int,), 4), "port": ((int,), 0), "group_timeout_s": (_NUM, 900)},
    "tasks": {"train": ((str,), REQUIRED), "held_out": ((str,), None)},
    "trainer": {"kind": ((str,), REQUIRED), "args": ((dict,), {})},
    "eval": {"every": ((int,), 5), "generations": ((int,), 2), "before_first_step": ((bool,), True)},
    "budget": {"max_steps": ((int,), REQUIRED), "minutes": (_NUM, 60)},
    "rewards": {"process_weight": (_NUM, 0.0)},
    "checks": {"logprob_tolerance": (_NUM, 1e-3), "no_signal_steps": ((int,), 3)},
    "warmup": {"demonstrations": ((str,), REQUIRED), "epochs": ((int,), 1), "learning_rate": (_NUM, 5e-5),
               "batch_size": ((int,), 8)},
}  # fmt: skip


def _did_you_mean(key: str, known: list[str]) -> str:
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
    return f' (did you mean "{near[0]}"?)' if near else f" (known: {', '.join(sorted(known))})"


def _table(where: str, name: str, value: dict[str, Any]) -> dict[str, Any]:
    schema = SCHEMA[name]
    prefix = f"{name}." if name else ""
    for key in value:
        if key not in schema:
            raise ConfigError(f"{where}: {prefix}{key}: unknown key{_did_you_mean(key, list(schema))}")
    out: dict[str, Any] = {}
    for key, (types, default) in schema.items():
        if key not in value:
            if default is REQUIRED:
                raise ConfigError(f"{where}: {prefix}{key} is required")
            out[key] = default
            continue
        v = value[key]
        # TOML booleans are ints to Python: a bool never passes for a number, nor a number for a bool.
        if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
            wanted = " or ".join("table" if t is dict else "array" if t is list else t.__name__ for t in types)
            raise ConfigError(f"{where}: {prefix}{key} must be a {wanted}, not {type(v).__name__} {v!r:.60}")
        out[key] = v
    return out


def _path(base: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else (base / p).resolve()


def load(path: str | Path, *, out: str | Path | None = None, seed: int | None = None) -> Experiment:
    """Reads and checks ``path``; ``out`` / ``seed`` override the file's (the command line's
    ``--out`` / ``--seed``). Relative paths in the file are relative to the file."""
    source = Path(path).resolve()
    where = str(path)
    try:
        data = tomllib.loads(source.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{where}: not valid TOML: {err}") from None
    if out is not None:
        data["out"] = str(Path(out).resolve())
    if seed is not None:
        data["seed"] = seed
    top = _table(where, "", data)
    # [warmup] is optional as a whole: absent, there is none; present, its own keys are checked.
    t = {name: _table(where, name, top[name]) for name in SCHEMA if name and top[name] is not None}
    base = source.parent

    m = t["model"]
    if (m["preset"] is None) == (m["path"] is None):
        raise ConfigError(f'{where}: model: give exactly one of preset = "smollm2" (scripts/engine/presets/) or path = "DIR"')
    if t["trainer"]["kind"] not in TRAINER_KINDS:
        raise ConfigError(
            f"{where}: trainer.kind: {t['trainer']['kind']!r} is not a trainer this command runs "
            f"(have: {', '.join(TRAINER_KINDS)}){_did_you_mean(t['trainer']['kind'], list(TRAINER_KINDS))}"
        )
    extra = t["engine"]["extra_args"]
    if not all(isinstance(a, str) for a in extra):
        raise ConfigError(f"{where}: engine.extra_args must be an array of strings")
    for name, key, low in (("budget", "max_steps", 1), ("eval", "every", 1), ("eval", "generations", 1),
                           ("serve", "run", 1), ("checks", "no_signal_steps", 1), ("warmup", "epochs", 1),
                           ("warmup", "batch_size", 1)):  # fmt: skip
        if name in t and t[name][key] < low:
            raise ConfigError(f"{where}: {name}.{key} must be at least {low}")
    if t["budget"]["minutes"] <= 0 or t["rewards"]["process_weight"] < 0:
        raise ConfigError(f"{where}: budget.minutes must be > 0 and rewards.process_weight >= 0")
    train = _path(base, t["tasks"]["train"])
    held = _path(base, t["tasks"]["held_out"])
    for label, p in (("tasks.train", train), ("tasks.held_out", held)):
        if p is not None and not p.is_file():
            raise ConfigError(f"{where}: {label}: no file {p} (generate it first? docs/experiments.md)")
    warmup = None
    if "warmup" in t:
        from .warmup import read_demonstrations

        demos = _path(base, t["warmup"]["demonstrations"])
        assert demos is not None
        if not demos.is_file():
            raise ConfigError(f"{where}: warmup.demonstrations: no file {demos}")
        if not t["warmup"]["learning_rate"] > 0:
            raise ConfigError(f"{where}: warmup.learning_rate must be > 0")
        read_demonstrations(where, demos)  # a bad row is refused before anything starts
        w = t["warmup"]
        warmup = WarmupConfig(demos, w["epochs"], float(w["learning_rate"]), w["batch_size"])
    out_dir = _path(base, top["out"])
    assert out_dir is not None and train is not None
    return Experiment(
        source=source,
        name=top["name"] or source.stem,
        seed=top["seed"],
        out=out_dir,
        model=ModelConfig(m["preset"], _path(base, m["path"]), _path(base, m["checkpoint_dir"])),
        engine=EngineConfig(t["engine"]["port"], float(t["engine"]["startup_timeout_s"]), tuple(extra)),
        serve=ServeConfig(t["serve"]["run"], t["serve"]["port"], float(t["serve"]["group_timeout_s"])),
        tasks=TasksConfig(train, held),
        trainer=TrainerConfig(t["trainer"]["kind"], dict(t["trainer"]["args"])),
        eval=EvalConfig(t["eval"]["every"], t["eval"]["generations"], t["eval"]["before_first_step"]),
        budget=BudgetConfig(t["budget"]["max_steps"], float(t["budget"]["minutes"])),
        rewards=RewardsConfig(float(t["rewards"]["process_weight"])),
        checks=ChecksConfig(float(t["checks"]["logprob_tolerance"]), t["checks"]["no_signal_steps"]),
        warmup=warmup,
        raw=data,
    )


# GRPOConfig fields the runner owns: set from the file's other tables, refused in [trainer.args].
RUNNER_OWNED = {
    "output_dir": "out",
    "seed": "seed",
    "max_steps": "budget.max_steps",
    "use_vllm": "(Polar samples through its own engine)",
    "use_cpu": "(set by the runner)",
    "report_to": "(the runner writes curve.jsonl)",
    "save_strategy": "(the runner saves every eval.every steps for resume)",
    "save_steps": "eval.every",
}


def check_trainer_args(where: str, args: dict[str, Any], fields: list[str]) -> None:
    """``[trainer.args]`` against the trainer config's own fields (``GRPOConfig``'s)."""
    for key in args:
        if key in RUNNER_OWNED:
            raise ConfigError(f"{where}: trainer.args.{key}: set by the runner, not here; use {RUNNER_OWNED[key]}")
        if key not in fields:
            raise ConfigError(f"{where}: trainer.args.{key}: not a GRPOConfig field{_did_you_mean(key, fields)}")

"""The real vLLM lane with `polar serve --upstream` in front of it, for the TRL plug-in's test and
benchmark: the same stack examples/rl_on_cpu.py trains against (examples/rl/local_stack.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .engine_lane import ENGINE_PYTHON, ROOT

sys.path.insert(0, str(ROOT / "examples" / "rl"))

from local_stack import TINY, Stack, copy_tiny_model  # noqa: E402
from local_stack import engine_stack as _engine_stack  # noqa: E402

__all__ = ["ENGINE_PYTHON", "TINY", "Stack", "copy_tiny_model", "engine_stack", "lowercase_task"]


@contextmanager
def engine_stack(out: Path, *, seed: int = 0, run: int = 4) -> Iterator[Stack]:
    """The stack on a fresh copy of the tiny model in ``out/model``."""
    out.mkdir(parents=True, exist_ok=True)
    with _engine_stack(out, copy_tiny_model(out / "model"), seed=seed, run=run) as stack:
        yield stack


def lowercase_task(task_id: str, instruction: str, max_tokens: int, *, split: bool = False) -> dict[str, Any]:
    """examples/rl_on_cpu.py's task: two calls a session (two-turn-agent.mjs), scored by the share
    of lowercase letters. Token-in-token-out splices the calls into one trace; the per_request
    builder gives one trace per call instead."""
    return {
        "task_id": task_id,
        "num_samples": 1,  # the plug-in sets num_generations
        "timeout_seconds": 120,
        "instruction": instruction,
        "agent": {
            "harness": "shell",
            "settings": {"command": "node {{polar_root}}/examples/agents/two-turn-agent.mjs {{instruction}}"},
            "sampling": {"max_tokens": max_tokens},
            "token_in_token_out": not split,
        },
        **({"builder": {"strategy": "per_request"}} if split else {}),
        "evaluator": {
            "strategy": "test_on_output",
            "config": {
                "command": "node lowercase-score.mjs",
                "files": {"lowercase-score.mjs": (ROOT / "examples" / "rl" / "lowercase-score.mjs").read_text()},
                "expected_lines": [f"ok {i}" for i in range(1, 101)],
                "partial_credit": True,
            },
        },
    }

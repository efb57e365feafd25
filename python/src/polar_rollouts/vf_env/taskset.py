"""The verifiers ``Taskset`` of Polar tasks: a TaskRequest JSONL file (docs/tasks.md), one
verifiers task per line; each rollout of it runs as one Polar session (harness.py), and its
reward is the one Polar's evaluator gave the session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verifiers.v1.task import Task, TaskData
from verifiers.v1.taskset import Taskset, TasksetConfig
from verifiers.v1.trace import Trace
from verifiers.v1.utils.decorators import reward


class PolarTasksetConfig(TasksetConfig):
    # Optional only because verifiers builds the config without flags to list them (--help).
    tasks: Path | None = None
    """A Polar task file: one TaskRequest (JSON) per line, e.g. examples/tasks.jsonl (--env.taskset.tasks)."""


class PolarData(TaskData):
    request: dict[str, Any]
    """The TaskRequest as written in the file; each rollout submits it as one session."""


class PolarTask(Task[PolarData]):
    @reward(weight=1.0)
    async def polar(self, trace: Trace) -> float:
        """The session's reward from Polar's evaluator; a session without one is an error
        (verifiers then marks the rollout failed), never a made-up 0."""
        polar = trace.info.get("polar") or {}
        if polar.get("reward") is None:
            raise ValueError(f"Polar session {polar.get('session_id')} has no reward: {polar.get('error')}")
        return float(polar["reward"])


class PolarTaskset(Taskset[PolarTask, PolarTasksetConfig]):
    def load(self) -> Iterator[PolarTask]:
        if self.config.tasks is None:
            raise ValueError("the polar-verifiers taskset needs a Polar task file: --env.taskset.tasks FILE.jsonl")
        path = self.config.tasks.expanduser().resolve()
        with path.open(encoding="utf-8") as lines:
            for n, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                request = json.loads(line)
                if not isinstance(request, dict) or not request.get("task_id") or not request.get("instruction"):
                    raise ValueError(f"{path}:{n}: a TaskRequest with task_id and instruction (docs/tasks.md)")
                yield PolarTask(
                    PolarData(id=request["task_id"], name=request["task_id"], prompt=request["instruction"], request=request),
                    self.config.task,
                )

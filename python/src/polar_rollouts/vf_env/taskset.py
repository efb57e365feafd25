"""The verifiers ``Taskset`` of Polar tasks: a TaskRequest JSONL file (docs/tasks.md), one
verifiers task per line; each rollout of it runs as one session of a Polar task (harness.py),
and its reward is the one Polar's evaluator gave the session.

The file is the operator's: a task reaches verifiers' env server as data a client sends (prime-rl's
orchestrator, or anyone who can reach the server's address), so the harness runs a task only as
this process's own file has it (``operator_request``), never as the wire carries it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verifiers.v1.task import Task, TaskData
from verifiers.v1.taskset import Taskset, TasksetConfig
from verifiers.v1.trace import Trace
from verifiers.v1.utils.decorators import reward

# The task files the tasksets of this process were configured with (the operator's).
_FILES: set[Path] = set()
_LOCK = threading.Lock()


class PolarTasksetConfig(TasksetConfig):
    # Optional only because verifiers builds the config without flags to list them (--help).
    tasks: Path | None = None
    """A Polar task file: one TaskRequest (JSON) per line, e.g. examples/tasks.jsonl (--env.taskset.tasks)."""


class PolarData(TaskData):
    request: dict[str, Any]
    """The TaskRequest as written in the file; each rollout submits it as one sample of a group."""


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
    def __init__(self, config: PolarTasksetConfig) -> None:
        super().__init__(config)
        if config.tasks is not None:
            with _LOCK:
                _FILES.add(config.tasks.expanduser().resolve())

    def load(self) -> Iterator[PolarTask]:
        if self.config.tasks is None:
            raise ValueError("the polar-verifiers taskset needs a Polar task file: --env.taskset.tasks FILE.jsonl")
        for request in read_tasks(self.config.tasks.expanduser().resolve()):
            yield PolarTask(
                PolarData(id=request["task_id"], name=request["task_id"], prompt=request["instruction"], request=request),
                self.config.task,
            )


def read_tasks(path: Path) -> list[dict[str, Any]]:
    requests = []
    with path.open(encoding="utf-8") as lines:
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            request = json.loads(line)
            if not isinstance(request, dict) or not request.get("task_id") or not request.get("instruction"):
                raise ValueError(f"{path}:{n}: a TaskRequest with task_id and instruction (docs/tasks.md)")
            requests.append(request)
    return requests


# path -> (its mtime and size when read, its requests by task id): a rollout looks its task up
# without reading a large file again, and an edited file is read anew.
_BY_ID: dict[Path, tuple[tuple[int, int], dict[str, dict[str, Any]]]] = {}


def operator_request(task_id: str) -> tuple[dict[str, Any] | None, list[Path]]:
    """The request of ``task_id`` in this process's task files, and the files looked in."""
    with _LOCK:
        files = sorted(_FILES)
        for path in files:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            cached = _BY_ID.get(path)
            if cached is None or cached[0] != stamp:
                cached = (stamp, {r["task_id"]: r for r in read_tasks(path)})
                _BY_ID[path] = cached
            if task_id in cached[1]:
                return cached[1][task_id], files
    return None, files

"""What the verl and slime plug-ins share: the Polar task a trainer row names, and one Polar task
group per trainer group.

A trainer starts the rows of one group (verl's repeats of a ``uid``, slime's samples of a
``group_index``) as separate coroutines, each asking for one rollout. Polar's session rule needs
them to be the sessions of one task: one group id, each session counted once. ``TaskGroups``
gathers the rows of a key, submits one task with as many samples, and hands each row its own
session's traces.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..client import ControlClient
from ..groups import group_by
from ..trace import Trace

# One per process, so a group split over two processes (two verl agent-loop workers) becomes
# two tasks, never one task whose sessions two rows both take.
PROCESS_TOKEN = secrets.token_hex(4)
MAX_TASK_ID = 128
ENV_URL, ENV_TOKEN, ENV_TASKS = "POLAR_CONTROL_URL", "POLAR_CONTROL_TOKEN", "POLAR_TASKS"
# A row's inline ``polar_task`` sets everything a task file does (the judge, commands, limits):
# taken only when the operator says the rows are theirs, since data sets are often downloaded.
ENV_ROW_TASKS = "POLAR_ROW_TASKS"


class PluginError(ValueError):
    """Bad configuration or input for a plug-in; the message names what to fix."""


def control_client(url: str | None, token: str | None, *, who: str) -> ControlClient:
    """The control API client from the plug-in's settings, or $POLAR_CONTROL_URL/_TOKEN."""
    url = url or os.environ.get(ENV_URL)
    token = token or os.environ.get(ENV_TOKEN)
    if not url or not token:
        raise PluginError(
            f"{who}: no Polar control API: set {ENV_URL} and {ENV_TOKEN} (what `polar serve` prints as "
            "--proxy and --control-token) or pass control_url / control_token"
        )
    return ControlClient(url, token)


@cache
def _task_file(path: str) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {}
    file = Path(path)
    if not file.is_file():
        raise PluginError(f"task file {path} not found (${ENV_TASKS} or the plug-in's tasks setting)")
    for n, line in enumerate(file.read_text().splitlines(), start=1):
        if line.strip():
            task = task_request(line, f"{path}:{n}")
            tasks[str(task.get("task_id"))] = task
    return tasks


def task_request(value: Any, where: str, error: type[PluginError] = PluginError) -> dict[str, Any]:
    """A task request given as JSON text or a mapping (a task file's line, a row's field), copied;
    ``error`` (a plug-in's own PluginError) names ``where`` and what is wrong."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise error(f"{where}: not a JSON task request") from None
    if not isinstance(value, Mapping) or not isinstance(value.get("instruction"), str):
        raise error(f"{where}: a task request needs an instruction (docs/tasks.md)")
    return copy.deepcopy(dict(value))


def task_for(fields: Mapping[str, Any] | None, tasks: str | None, *, where: str) -> dict[str, Any]:
    """The task request a row names: ``polar_task_id`` (a task of the task file ``tasks`` or
    $POLAR_TASKS) or, where $POLAR_ROW_TASKS=1, ``polar_task`` (a request, inline)."""
    fields = fields or {}
    if fields.get("polar_task") is not None:
        if os.environ.get(ENV_ROW_TASKS) != "1":
            raise PluginError(
                f"{where}: the row carries a whole task request (polar_task), which sets the judge, the "
                f"commands and the limits: name a task of your task file with polar_task_id instead, or set "
                f"{ENV_ROW_TASKS}=1 if you wrote these rows yourself"
            )
        return task_request(fields["polar_task"], f"{where} polar_task")
    task_id = fields.get("polar_task_id")
    if task_id is None:
        raise PluginError(
            f"{where}: the row names no Polar task: give it polar_task (a task request) or polar_task_id "
            f"(a task_id of the task file ${ENV_TASKS})"
        )
    path = tasks or os.environ.get(ENV_TASKS)
    if not path:
        raise PluginError(f"{where}: polar_task_id {task_id!r} needs a task file: set ${ENV_TASKS}")
    found = _task_file(str(path)).get(str(task_id))
    if found is None:
        raise PluginError(f"{where}: polar_task_id {task_id!r} is not a task_id of {path}")
    return copy.deepcopy(found)


_task_numbers = itertools.count()


# The trainer's sampling settings Polar's agent.sampling sets on every call of a session.
SAMPLING_KEYS = ("temperature", "top_p", "top_k")


def with_trainer_sampling(task: dict[str, Any], trainer: Mapping[str, Any], max_tokens: int | None, *, where: str) -> dict[str, Any]:
    """``task`` with the trainer's temperature / top_p / top_k (and ``max_tokens`` cap) in its
    ``agent.sampling``. The trainer recomputes logprobs at its own temperature, so a task asking
    for another value would make every importance ratio wrong: refused, naming both."""
    values = {k: trainer[k] for k in SAMPLING_KEYS if trainer.get(k) is not None}
    if isinstance(values.get("top_k"), int) and values["top_k"] <= 0:
        del values["top_k"]  # the trainers' "no top-k"
    if max_tokens is not None:
        values["max_tokens"] = int(max_tokens)
    agent = dict(task.get("agent") or {})
    own = dict(agent.get("sampling") or {})
    for key in SAMPLING_KEYS:
        if key in own and key in values and own[key] != values[key]:
            raise PluginError(
                f"{where}: the task's agent.sampling.{key}={own[key]} differs from the trainer's {values[key]}; "
                "drop it from the task or set the trainer's"
            )
    agent["sampling"] = {**own, **values}
    return {**task, "agent": agent}


def task_id_for(prefix: str, key: str) -> str:
    """A task id never used before: a trainer key seen again (a new step, an eval group numbered
    like a training one) is a new task, never an old session or a 409."""
    task_id = f"{prefix}-{key}-{PROCESS_TOKEN}-{next(_task_numbers)}"
    if len(task_id) > MAX_TASK_ID:
        raise PluginError(f"task id {task_id[:60]}... is over {MAX_TASK_ID} characters: shorten the group key")
    return task_id


@dataclass
class _Group:
    task: dict[str, Any]
    task_id: str = ""
    members: int = 0
    closed: bool = False
    joined: asyncio.Event = field(default_factory=asyncio.Event)
    submitted: asyncio.Event = field(default_factory=asyncio.Event)
    sessions: asyncio.Future[list[list[Trace]]] | None = None


def sessions_of(traces: Sequence[Trace], num_samples: int, task_id: str) -> list[list[Trace]]:
    """Each session's traces in sample order; a session with no trace at all is refused."""
    by_sample: dict[int, list[Trace]] = {}
    for t in traces:
        by_sample.setdefault(t.sample_index, []).append(t)
    missing = [i for i in range(num_samples) if i not in by_sample]
    if missing:
        raise PluginError(f"task {task_id}: sessions {missing} left no trace (see its results for why)")
    if len(group_by(traces)) > 1:
        raise PluginError(f"task {task_id}: its shard holds several groups")
    return [sorted(by_sample[i], key=lambda t: t.trace_index) for i in range(num_samples)]


class TaskGroups:
    """Gathers the rows of one trainer group into one Polar task.

    ``size`` known (slime: ``n_samples_per_prompt``): the group runs once that many rows joined.
    ``size=None`` (verl, whose row count per uid the agent loop cannot read): the rows that join
    before the first one resumes from one event-loop turn. The trainers start every row of a
    batch as a task before any of them runs, and nothing they do before calling the plug-in
    yields, so those are all of the key's rows in this process.
    """

    def __init__(self, client: ControlClient, *, prefix: str, timeout_s: float, poll_s: float = 1.0) -> None:
        self.client = client
        self.prefix = prefix
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._open: dict[str, _Group] = {}

    async def session(
        self,
        key: str,
        task: Mapping[str, Any],
        *,
        size: int | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
    ) -> tuple[str, list[Trace], int]:
        """(task id, this row's session traces, the group's size). ``prepare`` runs once per group,
        before its task is submitted (the plug-ins route the proxy to the trainer's engines and stamp
        its step there); what it raises reaches every row of the group."""
        group = self._open.get(key)
        if group is None or group.closed:
            group = _Group(task=dict(task))
            self._open[key] = group
        elif group.task != dict(task):
            raise PluginError(f"rows of group {key} name different Polar tasks; one group is one task")
        slot = group.members
        group.members += 1
        if size is not None and group.members > size:
            raise PluginError(f"group {key}: more than {size} rows")
        if slot == 0:
            if size is None:
                await asyncio.sleep(0)
            elif group.members < size:
                try:
                    await asyncio.wait_for(group.joined.wait(), self.timeout_s)
                except asyncio.TimeoutError:
                    raise PluginError(
                        f"group {key}: {group.members} of {size} rows came in {self.timeout_s}s; the trainer's "
                        "concurrency limit must let a whole group run at once"
                    ) from None
            group.closed = True
            if self._open.get(key) is group:
                del self._open[key]
            if prepare is not None:
                try:
                    await prepare()
                except BaseException as err:
                    failed: asyncio.Future[list[list[Trace]]] = asyncio.get_running_loop().create_future()
                    failed.set_exception(err)
                    failed.exception()  # raised here for this row; the others await it
                    group.sessions = failed
                    group.submitted.set()
                    raise
            group.task_id = task_id_for(self.prefix, key)
            request = {**group.task, "task_id": group.task_id, "num_samples": group.members}
            group.sessions = asyncio.get_running_loop().run_in_executor(None, self._run, request)
            group.submitted.set()
        elif size is not None and group.members == size:
            group.joined.set()
        await group.submitted.wait()
        assert group.sessions is not None
        sessions = await group.sessions
        return group.task_id, sessions[slot], len(sessions)

    def _run(self, request: dict[str, Any]) -> list[list[Trace]]:
        traces = self.client.run(request, timeout_s=self.timeout_s, poll_s=self.poll_s)
        return sessions_of(traces, int(request["num_samples"]), str(request["task_id"]))

"""A NeMo Gym row (the body of ``POST /run``) to the one-session TaskRequest Polar runs for it.

The row is what NeMo Gym's rollout collection sends: ``responses_create_params`` (an OpenAI
Responses request, ``input`` required), ``_ng_task_index`` / ``_ng_rollout_index``, and any
other keys of the input line, passed through untouched. Polar reads one of those: ``polar_task``,
TaskRequest fields for this row (docs/tasks.md), merged over the server's ``--task-template``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

# The control API's task id rule (shared/schemas/common.ts), checked here so a bad id names the row.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class RowError(ValueError):
    """A row Polar cannot turn into a task; the message names the field."""


def task_for_row(row: Mapping[str, Any], template: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """The TaskRequest for one ``/run``: template ⊕ ``row["polar_task"]``, one sample.

    The task id is ``{run_id}.{base}.{rollout}`` with ``base`` the row's ``polar_task.task_id`` or
    ``t{_ng_task_index}``: NeMo Gym re-sends a ``/run`` after a dropped connection, and the same id
    makes that resubmission wait for the same session instead of starting another.
    """
    params = row.get("responses_create_params")
    if not isinstance(params, Mapping):
        raise RowError("responses_create_params: required (an object with `input`), as NeMo Gym's rows carry it")
    own = row.get("polar_task", {})
    if not isinstance(own, Mapping):
        raise RowError(f"polar_task: must be an object of TaskRequest fields, got {type(own).__name__}")
    task = _merge(template, own)
    rollout = _index(row, "_ng_rollout_index")
    base = str(own.get("task_id") or f"t{_index(row, '_ng_task_index')}")
    task["task_id"] = f"{run_id}.{base}.{rollout}"
    if not _ID.match(task["task_id"]) or ".." in task["task_id"]:
        raise RowError(f"task id {task['task_id']!r} (from --run-id and polar_task.task_id) is not a valid Polar id")
    task["num_samples"] = 1
    if not task.get("instruction"):
        task["instruction"] = instruction_of(params)
    sampling = _sampling_of(params)
    if sampling:
        agent = task.setdefault("agent", {})
        agent["sampling"] = {**sampling, **agent.get("sampling", {})}
    return task


def instruction_of(params: Mapping[str, Any]) -> str:
    """The prompt a harness gets: ``instructions`` and the text of every input message, in order.

    A harness takes one instruction, so a multi-message input is joined with blank lines; a row
    that needs more (a system prompt the harness sets itself, files) says so in ``polar_task``.
    """
    parts: list[str] = []
    if isinstance(params.get("instructions"), str):
        parts.append(params["instructions"])
    given = params.get("input")
    if isinstance(given, str):
        parts.append(given)
    elif isinstance(given, list):
        for i, item in enumerate(given):
            if not isinstance(item, Mapping) or "role" not in item:
                raise RowError(f"responses_create_params.input[{i}]: only messages (with a role) map to an instruction")
            parts.append(_text(item.get("content"), f"responses_create_params.input[{i}].content"))
    else:
        raise RowError("responses_create_params.input: required, a string or a list of messages")
    text = "\n\n".join(p for p in parts if p)
    if not text:
        raise RowError("responses_create_params.input: no text to give the harness as its instruction")
    return text


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
                raise RowError(f"{where}: only text parts (input_text / output_text) map to an instruction")
            texts.append(part["text"])
        return "\n".join(texts)
    raise RowError(f"{where}: a string or a list of text parts")


def _sampling_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The request's sampling, applied by the proxy to every call of the session (agent.sampling);
    ``polar_task.agent.sampling`` wins where both set a value."""
    out: dict[str, Any] = {}
    for gym, ours in (("temperature", "temperature"), ("top_p", "top_p"), ("max_output_tokens", "max_tokens")):
        if params.get(gym) is not None:
            out[ours] = params[gym]
    return out


def _index(row: Mapping[str, Any], key: str) -> int:
    value = row.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RowError(f"{key}: a non-negative integer (NeMo Gym's collection sets it), got {value!r}")
    return value


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; anything else in ``over`` replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out

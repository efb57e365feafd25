"""A NeMo Gym row (the body of ``POST /run``) to the TaskRequest fields Polar runs for it.

The row is what NeMo Gym's rollout collection sends: ``responses_create_params`` (an OpenAI
Responses request, ``input`` required), ``_ng_task_index`` / ``_ng_rollout_index`` (or TRL's
``_rowidx``), and any other keys of the input line, passed through untouched. Polar reads one of
those: ``polar_task``, TaskRequest fields for this row, merged over the operator's
``--task-template``. Rows usually come from downloaded data sets, so a row may only set the
fields the operator allows (``--row-fields``; by default the instruction, a task id and the
sampling): a row naming any other field is refused with its name, never merged.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

# The control API's task id rule (shared/schemas/common.ts), checked here so a bad id names the row.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

# What a row may set unless the operator says otherwise: what the prompt is, what to call it, how
# to sample. Never the harness, the evaluator, the runtime, limits or env: those are the task's.
DEFAULT_ROW_FIELDS = ("instruction", "task_id", "agent.sampling")

# Set by this server for every task: a row or an allowlist naming them is a mistake.
_NEVER_FROM_ROWS = ("num_samples",)

# Row keys that differ between repeats of one row (NeMo Gym's rollout index, TRL's and NeMo RL's
# row index): left out of the row's identity, used to recognise a re-sent /run.
REPEAT_KEYS = ("_ng_rollout_index", "_rowidx")


class RowError(ValueError):
    """A row Polar cannot turn into a task; the message names the field."""


def parse_row_fields(spec: str | Iterable[str]) -> tuple[str, ...]:
    """``--row-fields``: dotted TaskRequest paths (``instruction,task_id,agent.sampling,metadata``)."""
    fields = [f.strip() for f in (spec.split(",") if isinstance(spec, str) else spec) if f.strip()]
    for field in fields:
        if not re.fullmatch(r"[a-z_]+(\.[a-z_]+)*", field):
            raise ValueError(f"--row-fields: {field!r} is not a dotted field path such as agent.sampling")
        if field.split(".")[0] in _NEVER_FROM_ROWS:
            raise ValueError(f"--row-fields: {field} is set by the server (repeats of a row), never by a row")
    return tuple(fields)


def task_for_row(
    row: Mapping[str, Any], template: Mapping[str, Any], allowed: Iterable[str] = DEFAULT_ROW_FIELDS
) -> tuple[str, dict[str, Any]]:
    """``(base, task)``: the task (template ⊕ the row's allowed ``polar_task`` fields, without
    ``task_id`` and ``num_samples``, which the server sets per group) and the base of its id:
    ``polar_task.task_id``, else ``t{_ng_task_index}``, else a hash of the row (TRL's rows carry
    only ``_rowidx``: two prompts must not share an id)."""
    params = row.get("responses_create_params")
    if not isinstance(params, Mapping):
        raise RowError("responses_create_params: required (an object with `input`), as NeMo Gym's rows carry it")
    own = row.get("polar_task", {})
    if not isinstance(own, Mapping):
        raise RowError(f"polar_task: must be an object of TaskRequest fields, got {type(own).__name__}")
    allowed = tuple(allowed)
    _check_allowed(own, allowed, "")
    fields = {k: v for k, v in own.items() if k != "task_id"}
    task = _merge(template, fields)
    task.pop("task_id", None)
    task.pop("num_samples", None)
    if not task.get("instruction"):
        task["instruction"] = instruction_of(params)
    sampling = _sampling_of(params)
    if sampling:
        agent = task.setdefault("agent", {})
        agent["sampling"] = {**sampling, **agent.get("sampling", {})}
    if own.get("task_id") is not None:
        base = str(own["task_id"])
    elif "_ng_task_index" in row:
        base = f"t{_index(row, '_ng_task_index')}"
    else:
        base = f"r{row_identity(row)[:12]}"
    for key in REPEAT_KEYS:
        if key in row:
            _index(row, key)
    if not _ID.match(f"x.{base}.g0") or ".." in base:
        raise RowError(f"polar_task.task_id {base!r} is not a valid Polar id part")
    return base, task


def row_identity(row: Mapping[str, Any]) -> str:
    """A hash of the row without the keys that tell its repeats apart: repeats share it."""
    kept = {k: v for k, v in row.items() if k not in REPEAT_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def repeat_key(row: Mapping[str, Any]) -> tuple[str, int] | None:
    """The key naming this repeat among its row's (a re-sent /run carries the same), if any."""
    for key in REPEAT_KEYS:
        if key in row:
            return key, _index(row, key)
    return None


def instruction_of(params: Mapping[str, Any]) -> str:
    """The prompt a harness gets: ``instructions`` and the text of every input message, in order.

    A harness takes one instruction, so a multi-message input is joined with blank lines; a row
    that needs more (a system prompt the harness sets itself, files) says so in the template.
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


def _check_allowed(own: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    """Every path the row sets must be an allowed field or inside one; an object on the way to an
    allowed field is walked into (``agent`` for ``agent.sampling``), anything else is refused."""
    for key, value in own.items():
        path = f"{prefix}{key}"
        if any(path == a or path.startswith(f"{a}.") for a in allowed):
            continue
        if isinstance(value, Mapping) and any(a.startswith(f"{path}.") for a in allowed):
            _check_allowed(value, allowed, f"{path}.")
            continue
        raise RowError(
            f"polar_task.{path}: a row may not set this field (the operator allows {', '.join(allowed) or 'none'}; "
            "polar-nemo-gym --row-fields widens it; the rest comes from --task-template)"
        )


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
    the template's or the row's ``polar_task.agent.sampling`` wins where both set a value."""
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

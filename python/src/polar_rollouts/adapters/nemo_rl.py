"""NeMo RL: a ``DatumSpec`` with an ``LLMMessageLogType`` message log (``nemo_rl/data/interfaces.py``).

Each message is ``{"role", "content", "token_ids"}``; messages the policy sampled are
``assistant`` messages with ``generation_logprobs``. NeMo RL's GRPO loop sets
``token_loss_mask`` to ones on assistant messages and zeros elsewhere, then concatenates the
messages (``batched_message_log_to_flat_message``): so the trace is cut at every loss-mask
change, sampled runs become assistant messages and inserted runs ``environment`` messages,
and the flattened log is exactly prompt + response with the loss mask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..trace import Trace
from .optional_imports import import_extra


def _runs(mask: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, end, value) of each maximal run of equal mask values."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            runs.append((start, i, int(mask[start])))
            start = i
    return runs


def to_message_log(
    trace: Trace, *, decode: Callable[[list[int]], str] | None = None, prompt_role: str = "user"
) -> list[dict[str, Any]]:
    torch = import_extra("torch", extra="torch", needed_by="to_message_log")

    def text(ids: np.ndarray) -> str:
        return decode(ids.tolist()) if decode is not None else ""

    log: list[dict[str, Any]] = [
        {"role": prompt_role, "content": text(trace.prompt_ids), "token_ids": torch.from_numpy(trace.prompt_ids.copy())}
    ]
    for start, end, value in _runs(trace.loss_mask):
        ids = trace.response_ids[start:end]
        message: dict[str, Any] = {
            "role": "assistant" if value == 1 else "environment",
            "content": text(ids),
            "token_ids": torch.from_numpy(ids.copy()),
        }
        if value == 1:
            lp = trace.response_logprobs
            message["generation_logprobs"] = (
                torch.zeros(end - start, dtype=torch.float32) if lp is None else torch.from_numpy(lp[start:end].copy())
            )
        log.append(message)
    return log


def to_datum(trace: Trace, idx: int, *, decode: Callable[[list[int]], str] | None = None) -> dict[str, Any]:
    """A ``DatumSpec`` dict; Polar's flags ride in ``extra_env_info`` (filter orphans with
    ``filter_traces`` first, or zero their ``loss_multiplier`` yourself)."""
    log = to_message_log(trace, decode=decode)
    return {
        "message_log": log,
        "length": int(len(trace.prompt_ids) + len(trace.response_ids)),
        "extra_env_info": {
            "reward": trace.reward,
            "group_id": trace.group_id,
            "session_id": trace.session_id,
            "trace_index": trace.trace_index,
            "orphan": trace.orphan,
            "crossed_weight_update": trace.crossed_weight_update,
            "policy_version": trace.policy_version,
        },
        "loss_multiplier": 1.0,
        "idx": idx,
        "task_name": trace.task_id,
    }

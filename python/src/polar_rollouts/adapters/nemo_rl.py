"""NeMo RL: a ``DatumSpec`` with an ``LLMMessageLogType`` message log (``nemo_rl/data/interfaces.py``).

Checked against NVIDIA-NeMo/RL at 7ea279ab (``nemo_rl/algorithms/grpo.py``). After a rollout
NeMo RL's GRPO loop reads ``length`` as the original prompt's length: it keeps the messages that
start within it (``extract_initial_prompt_messages``), and its GRPO estimator groups samples by
those prompt tokens. So ``length`` is the trace's prompt length, and the prompt is one message.
``add_grpo_token_loss_masks_and_generation_logprobs`` then trains exactly the ``assistant``
messages that carry ``generation_logprobs`` (zeros elsewhere), and
``batched_message_log_to_flat_message`` concatenates the messages: so the response is cut at
every loss-mask change, sampled runs become assistant messages with the engine's logprobs and
inserted runs ``environment`` messages, and the flattened log is prompt + response with
``0...0 + loss_mask``. A trace without logprobs is refused: an assistant message without them
would not be trained, and zeros would claim probability 1 to its importance-sampling correction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..groups import session_grpo_advantages
from ..trace import Trace
from .behaviour_logprobs import RawLogprobs, behaviour_logprobs
from .rewards import require_rewards
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
    trace: Trace,
    *,
    decode: Callable[[list[int]], str] | None = None,
    prompt_role: str = "user",
    raw_logprobs: RawLogprobs = "refuse",
) -> list[dict[str, Any]]:
    torch = import_extra("torch", extra="torch", needed_by="to_message_log")

    logprobs = behaviour_logprobs(trace, raw_logprobs=raw_logprobs)

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
            message["generation_logprobs"] = torch.from_numpy(logprobs[start:end].copy())
        log.append(message)
    return log


def _env_info(t: Trace) -> dict[str, Any]:
    return {
        "reward": t.reward,
        "group_id": t.group_id,
        "session_id": t.session_id,
        "trace_index": t.trace_index,
        "orphan": t.orphan,
        "crossed_weight_update": t.crossed_weight_update,
        "policy_version": t.policy_version,
    }


def to_datum(trace: Trace, idx: int, *, decode: Callable[[list[int]], str] | None = None, **kwargs: Any) -> dict[str, Any]:
    """A ``DatumSpec`` dict; ``length`` is the prompt's (what the GRPO loop reads it as). Polar's
    flags ride in ``extra_env_info`` (filter orphans with ``filter_traces`` first, or zero their
    ``loss_multiplier`` yourself)."""
    return {
        "message_log": to_message_log(trace, decode=decode, **kwargs),
        "length": int(len(trace.prompt_ids)),
        "extra_env_info": _env_info(trace),
        "loss_multiplier": 1.0,
        "idx": idx,
        "task_name": trace.task_id,
    }


def to_repeated_batch(traces: Sequence[Trace], **kwargs: Any) -> dict[str, Any]:
    """The batch NeMo RL's GRPO loop holds after a rollout (``repeated_batch``): the datums'
    keys as lists, ``length`` and ``loss_multiplier`` as tensors, and the reward in
    ``total_reward``, where the loop reads it. A trace without a reward is refused by name."""
    import torch

    rewards = require_rewards(traces)
    datums = [to_datum(t, i, **kwargs) for i, t in enumerate(traces)]
    return {
        "message_log": [d["message_log"] for d in datums],
        "length": torch.tensor([d["length"] for d in datums]),
        "loss_multiplier": torch.tensor([d["loss_multiplier"] for d in datums]),
        "extra_env_info": [d["extra_env_info"] for d in datums],
        "idx": [d["idx"] for d in datums],
        "task_name": [d["task_name"] for d in datums],
        "total_reward": torch.tensor(rewards, dtype=torch.float32),
    }


class PolarGRPOAdvantageEstimator:
    """GRPO with Polar's session rule, in NeMo RL's estimator interface
    (``compute_advantage(prompt_ids, rewards, mask, repeated_batch=..., ...)``).

    NeMo RL's own ``GRPOAdvantageEstimator`` groups by prompt tokens and counts rows. That gives
    Polar's numbers when each session is one trace, or when every session's k-th trace has the
    same prompt; a session split into traces whose later prompts differ per session (tool output
    in them) puts those traces in groups of one, with advantage 0. This estimator groups by
    ``extra_env_info`` group and session instead; use it in place of NeMo RL's (its
    ``_create_advantage_estimator`` knows only its own names).
    """

    def __init__(self, *, normalize_rewards: bool = True) -> None:
        self.normalize_rewards = normalize_rewards

    def compute_advantage(self, prompt_ids: Any, rewards: Any, mask: Any, repeated_batch: Any = None, **_: Any) -> Any:
        import torch

        if repeated_batch is None:
            raise ValueError("PolarGRPOAdvantageEstimator needs repeated_batch (its extra_env_info)")
        info = repeated_batch["extra_env_info"]
        advantages = session_grpo_advantages(
            [i["group_id"] for i in info],
            [i["session_id"] for i in info],
            rewards.detach().cpu().double().numpy(),
            normalize_std=self.normalize_rewards,
        )
        return torch.from_numpy(advantages).to(rewards).unsqueeze(-1).expand(mask.shape)

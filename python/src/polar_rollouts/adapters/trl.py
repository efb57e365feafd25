"""TRL and Hugging Face ``datasets``: a tokenized dataset in TRL's column names.

``to_hf_dataset`` gives prompt/completion columns (``prompt_ids``, ``completion_ids``,
``completion_mask``, what TRL's GRPO trainer builds per sample); ``to_sft_dataset`` gives
``input_ids`` + ``completion_mask`` over the whole sequence, which TRL's
``DataCollatorForLanguageModeling(completion_only_loss=True)`` turns into ``labels``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..groups import grpo_advantages
from ..trace import Trace
from .optional_imports import import_extra


def _common(t: Trace, advantage: float) -> dict[str, Any]:
    return {
        "reward": t.reward,
        "advantage": advantage,
        "group_id": t.group_id,
        "session_id": t.session_id,
        "trace_index": t.trace_index,
        "status": t.status,
        "orphan": t.orphan,
        "crossed_weight_update": t.crossed_weight_update,
        "policy_version": t.policy_version,
    }


def to_hf_rows(traces: Sequence[Trace]) -> list[dict[str, Any]]:
    advantages = grpo_advantages(traces)
    return [
        {
            "prompt_ids": t.prompt_ids.tolist(),
            "completion_ids": t.response_ids.tolist(),
            "completion_mask": t.loss_mask.astype(int).tolist(),
            "old_per_token_logps": None if t.response_logprobs is None else t.response_logprobs.tolist(),
            **_common(t, float(a)),
        }
        for t, a in zip(traces, advantages)
    ]


def to_hf_dataset(traces: Sequence[Trace]) -> Any:
    Dataset = import_extra("datasets", extra="trl", needed_by="to_hf_dataset").Dataset

    return Dataset.from_list(to_hf_rows(traces))


def to_sft_dataset(traces: Sequence[Trace]) -> Any:
    """``input_ids`` (prompt + response), ``completion_mask`` (0 on the prompt, the loss mask on
    the response) and ``labels`` (the token where the mask is 1, -100 elsewhere, as TRL's SFT
    preparation builds them): only the tokens the policy sampled are trained on, never the
    inserted tool output. ``labels`` is given so ``skip_prepare_dataset=True`` works too."""
    Dataset = import_extra("datasets", extra="trl", needed_by="to_sft_dataset").Dataset

    advantages = grpo_advantages(traces)
    return Dataset.from_list(
        [
            {
                "input_ids": t.input_ids.tolist(),
                "completion_mask": [0] * len(t.prompt_ids) + t.loss_mask.astype(int).tolist(),
                "labels": [-100] * len(t.prompt_ids)
                + np.where(t.loss_mask == 1, t.response_ids, -100).tolist(),
                **_common(t, float(a)),
            }
            for t, a in zip(traces, advantages)
        ]
    )

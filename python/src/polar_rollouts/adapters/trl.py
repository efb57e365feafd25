"""TRL and Hugging Face ``datasets``: TRL's own field names, with TRL's meaning.

Checked against TRL 1.16.0 (``trl/trainer/grpo_trainer.py``). In GRPOTrainer,
``completion_mask`` is the attention mask of the completion (1 on every real token, tool output
included) and ``tool_mask`` takes inserted tokens out of the loss (0 on tool output, as its own
multi-turn rollout marks them, or a ``rollout_func``'s ``env_mask``); the loss mask is their
product. ``old_per_token_logps`` are the training model's own logprobs before the update (TRL
computes them); the engine's go in ``sampling_per_token_logps``, from which TRL builds its
importance-sampling ratio and its off-policy mask. The loss reads ``advantages``.

``to_grpo_inputs`` gives the batch ``GRPOTrainer._generate_and_score_completions`` returns, so a
subclass that overrides that method (to train on Polar's rollouts instead of generating) hands it
to TRL's own ``compute_loss``. ``to_sft_dataset`` gives ``input_ids`` + ``completion_mask`` over
the whole sequence, which TRL's ``DataCollatorForLanguageModeling(completion_only_loss=True)``
turns into ``labels``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..groups import grpo_advantages
from ..images import traces_images
from ..store import Store
from ..trace import Trace
from .behaviour_logprobs import RawLogprobs, behaviour_logprobs
from .rewards import require_rewards
from .optional_imports import import_extra


def _flags(t: Trace) -> dict[str, Any]:
    return {
        "reward": t.reward,
        "group_id": t.group_id,
        "session_id": t.session_id,
        "trace_index": t.trace_index,
        "status": t.status,
        "orphan": t.orphan,
        "crossed_weight_update": t.crossed_weight_update,
        "policy_version": t.policy_version,
    }


def to_hf_rows(
    traces: Sequence[Trace],
    *,
    sampling_logprobs: bool = True,
    raw_logprobs: RawLogprobs = "refuse",
    image_store: str | os.PathLike[str] | Store | None = None,
) -> list[dict[str, Any]]:
    """Per-sample GRPO columns: ``prompt_ids``, ``completion_ids``, ``tool_mask`` (Polar's
    ``loss_mask``), ``sampling_per_token_logps`` (the engine's; ``sampling_logprobs=False`` leaves
    them out), ``advantages`` (Polar's session-rule GRPO advantage); when a trace has images
    (read from ``image_store``), every row gets TRL's ``images`` column (PIL images, engine order;
    ``[]`` for a row without); a trace whose images do not load within the reader's bounds is left
    out and marked (``Trace.image_error``). A trace without a reward or logprobs is refused by name."""
    # First: a trace whose images do not load is left out (and marked), not the batch failed.
    traces, images = traces_images(traces, image_store, "to_hf_rows")
    require_rewards(traces)
    advantages = grpo_advantages(traces)
    rows = []
    for i, (t, a) in enumerate(zip(traces, advantages)):
        r: dict[str, Any] = {
            "prompt_ids": t.prompt_ids.tolist(),
            "completion_ids": t.response_ids.tolist(),
            "tool_mask": t.loss_mask.astype(int).tolist(),
        }
        if sampling_logprobs:
            r["sampling_per_token_logps"] = behaviour_logprobs(t, raw_logprobs=raw_logprobs).tolist()
        if images is not None:
            r["images"] = images[i]
        rows.append({**r, "advantages": float(a), **_flags(t)})
    return rows


def to_hf_dataset(traces: Sequence[Trace], **kwargs: Any) -> Any:
    Dataset = import_extra("datasets", extra="trl", needed_by="to_hf_dataset").Dataset

    return Dataset.from_list(to_hf_rows(traces, **kwargs))


def to_grpo_inputs(
    traces: Sequence[Trace],
    *,
    pad_token_id: int,
    sampling_logprobs: bool = True,
    raw_logprobs: RawLogprobs = "refuse",
    image_store: str | os.PathLike[str] | Store | None = None,
    image_processor: Any | None = None,
) -> dict[str, Any]:
    """The padded batch GRPOTrainer's loss reads: ``prompt_ids`` / ``prompt_mask`` (left-padded),
    ``completion_ids`` / ``completion_mask`` (right-padded; the mask is attention: 1 on every real
    token), ``tool_mask`` (the loss mask; 1 on padding, as TRL pads it), ``advantages``,
    ``sampling_per_token_logps`` and ``num_items_in_batch`` (trainable tokens, as TRL counts them).
    With images, ``num_images`` per row and, from ``image_processor`` (the processing class's
    ``image_processor``) over the batch's images in order, its fields (``pixel_values``,
    ``image_grid_thw``, ...), flattened over images as ``_generate_and_score_completions`` returns them."""
    import torch

    rows = to_hf_rows(
        traces, sampling_logprobs=sampling_logprobs, raw_logprobs=raw_logprobs, image_store=image_store
    )
    n = len(rows)
    p_len = max(len(r["prompt_ids"]) for r in rows)
    c_len = max(len(r["completion_ids"]) for r in rows)
    prompt_ids = torch.full((n, p_len), pad_token_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, p_len), dtype=torch.long)
    completion_ids = torch.full((n, c_len), pad_token_id, dtype=torch.long)
    completion_mask = torch.zeros((n, c_len), dtype=torch.long)
    tool_mask = torch.ones((n, c_len), dtype=torch.long)
    sampling = torch.zeros((n, c_len), dtype=torch.float32)
    for i, r in enumerate(rows):
        pl, cl = len(r["prompt_ids"]), len(r["completion_ids"])
        prompt_ids[i, p_len - pl :] = torch.tensor(r["prompt_ids"])
        prompt_mask[i, p_len - pl :] = 1
        completion_ids[i, :cl] = torch.tensor(r["completion_ids"])
        completion_mask[i, :cl] = 1
        tool_mask[i, :cl] = torch.tensor(r["tool_mask"])
        if sampling_logprobs:
            sampling[i, :cl] = torch.tensor(r["sampling_per_token_logps"])
    inputs: dict[str, Any] = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": torch.tensor([r["advantages"] for r in rows], dtype=torch.float32),
        "num_items_in_batch": (completion_mask * tool_mask).sum(),
    }
    if sampling_logprobs:
        inputs["sampling_per_token_logps"] = sampling
    if "images" in rows[0]:
        inputs["num_images"] = [len(r["images"]) for r in rows]
        flat = [img for r in rows for img in r["images"]]
        if image_processor is not None and flat:
            inputs.update(dict(image_processor(images=flat, return_tensors="pt")))
    return inputs


def to_sft_dataset(traces: Sequence[Trace]) -> Any:
    """``input_ids`` (prompt + response), ``completion_mask`` (0 on the prompt, the loss mask on
    the response) and ``labels`` (the token where the mask is 1, -100 elsewhere, as TRL's SFT
    preparation builds them): only the tokens the policy sampled are trained on, never the
    inserted tool output. ``labels`` is given so ``skip_prepare_dataset=True`` works too. SFT
    needs no reward: ``reward`` is the shard's (None when unscored)."""
    Dataset = import_extra("datasets", extra="trl", needed_by="to_sft_dataset").Dataset

    return Dataset.from_list(
        [
            {
                "input_ids": t.input_ids.tolist(),
                "completion_mask": [0] * len(t.prompt_ids) + t.loss_mask.astype(int).tolist(),
                "labels": [-100] * len(t.prompt_ids)
                + np.where(t.loss_mask == 1, t.response_ids, -100).tolist(),
                **_flags(t),
            }
            for t in traces
        ]
    )

"""verl: a ``DataProto`` batch shaped like verl's agent loop output (``AgentLoopManager._postprocess``).

Prompts are left-padded and responses right-padded to a common length, so every row's
response starts at the same column, as verl's actor and advantage code assume. Checked against
verl 0.9.1: the reward goes in ``rm_scores`` (what ``verl.trainer.ppo.reward.extract_reward``
reads), and GRPO groups rows by ``uid``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..images import traces_images
from ..store import Store
from ..trace import Trace
from .behaviour_logprobs import RawLogprobs, behaviour_logprobs
from .optional_imports import import_extra
from .rewards import require_rewards


class PolarUid(str):
    """A ``uid`` that is its group id to everything in verl (equality, hashing, grouping) and
    also carries the trace's session, which the ``polar_grpo`` estimator (verl_estimator.py)
    needs to count each session once; verl hands estimators only ``uid``."""

    session_id: str

    def __new__(cls, group_id: str, session_id: str) -> PolarUid:
        uid = super().__new__(cls, group_id)
        uid.session_id = session_id
        return uid

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        # Ray pickles the batch between driver and workers; keep the session across.
        return (PolarUid, (str(self), self.session_id))


def to_verl_tensors(
    traces: Sequence[Trace],
    *,
    pad_token_id: int,
    max_prompt_length: int | None = None,
    max_response_length: int | None = None,
    rollout_logprobs: bool = True,
    raw_logprobs: RawLogprobs = "refuse",
    logprobs_as_old_log_probs: bool = False,
    step_rewards: bool = False,
    image_store: str | os.PathLike[str] | Store | None = None,
    image_processor: Any | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
    """(tensors, non_tensors, meta_info) for ``DataProto.from_dict``.

    Tensors: ``prompts``, ``responses``, ``input_ids``, ``attention_mask``, ``position_ids``,
    ``response_mask`` (Polar's ``loss_mask``; 0 on padding), ``rm_scores`` (the reward on the last
    response token, where verl's agent loop puts it), ``rollout_log_probs`` (the engine's, for
    verl's rollout correction; ``rollout_logprobs=False`` leaves them out). With ``step_rewards``,
    each turn's process reward (``Trace.step_rewards``) is added to ``rm_scores`` at that turn's
    last token: verl's per-token estimators (``gae``, ``reinforce_plus_plus``) then credit each
    turn by its own reward, while the outcome estimators (``grpo``, ``rloo``, ...) sum a row's
    scores into one number, so there the step rewards add to the outcome. With
    ``logprobs_as_old_log_probs`` they are also ``old_log_probs`` (verl's bypass mode).
    Non-tensors: ``uid`` (a ``PolarUid``: the group for verl, the session for ``polar_grpo``),
    ``session_id``, ``trace_index``, ``status``, ``orphan``, ``crossed_weight_update``,
    ``policy_version``; for traces with images (``Trace.image_hashes``, read from ``image_store``)
    also ``multi_modal_data`` (``{"images": [PIL images]}`` per row, the agent loop's
    ``AgentLoopOutput.multi_modal_data``) and, with ``image_processor`` (the model processor's
    ``image_processor``), ``multi_modal_inputs`` (its ``pixel_values``, ``image_grid_thw`` and
    ``images_seqlens`` per row, as verl's ``_compute_multi_modal_inputs`` builds them; ``{}`` for a
    row without images). A trace whose images do not load within the reader's bounds is left out
    and marked (``Trace.image_error``; ``polar_rollouts.images``). A trace without a reward (or without logprobs, when they are asked for)
    is refused by name; a trace longer than a limit is refused, not cut.
    """
    torch = import_extra("torch", extra="torch", needed_by="to_verl_tensors")

    if not traces:
        raise ValueError("no traces")
    # First: a trace whose images do not load is left out (and marked), not the batch failed.
    traces, images = traces_images(traces, image_store, "to_verl_tensors")
    rewards = require_rewards(traces)
    lps = [behaviour_logprobs(t, raw_logprobs=raw_logprobs) for t in traces] if rollout_logprobs else None
    if logprobs_as_old_log_probs and lps is None:
        raise ValueError("logprobs_as_old_log_probs needs rollout_logprobs=True")
    p_len = max(len(t.prompt_ids) for t in traces)
    r_len = max(len(t.response_ids) for t in traces)
    for limit, longest, what in ((max_prompt_length, p_len, "prompt"), (max_response_length, r_len, "response")):
        if limit is not None and longest > limit:
            raise ValueError(f"a {what} has {longest} tokens, over the limit {limit}")
    p_len = max_prompt_length or p_len
    r_len = max_response_length or r_len
    n = len(traces)
    prompts = torch.full((n, p_len), pad_token_id, dtype=torch.long)
    responses = torch.full((n, r_len), pad_token_id, dtype=torch.long)
    attention = torch.zeros((n, p_len + r_len), dtype=torch.long)
    response_mask = torch.zeros((n, r_len), dtype=torch.long)
    scores = torch.zeros((n, r_len), dtype=torch.float32)
    logprobs = torch.zeros((n, r_len), dtype=torch.float32)
    for i, t in enumerate(traces):
        pl, rl = len(t.prompt_ids), len(t.response_ids)
        if rl == 0:
            raise ValueError(f"{t.session_id} trace {t.trace_index} has no response tokens to put its reward on")
        prompts[i, p_len - pl :] = torch.from_numpy(t.prompt_ids)
        responses[i, :rl] = torch.from_numpy(t.response_ids)
        attention[i, p_len - pl : p_len + rl] = 1
        response_mask[i, :rl] = torch.from_numpy(t.loss_mask.astype(np.int64))
        if lps is not None:
            logprobs[i, :rl] = torch.from_numpy(lps[i])
        scores[i, rl - 1] = rewards[i]
        if step_rewards:
            scores[i, :rl] += torch.from_numpy(t.step_reward_tokens())
    input_ids = torch.cat([prompts, responses], dim=1)
    # verl's compute_position_id_with_mask: positions count attended tokens, from 0.
    position_ids = torch.clip(torch.cumsum(attention, dim=-1) - 1, min=0)
    tensors: dict[str, Any] = {
        "prompts": prompts,
        "responses": responses,
        "input_ids": input_ids,
        "attention_mask": attention,
        "position_ids": position_ids,
        "response_mask": response_mask,
        "rm_scores": scores,
    }
    if lps is not None:
        tensors["rollout_log_probs"] = logprobs
        if logprobs_as_old_log_probs:
            tensors["old_log_probs"] = logprobs.clone()
    uids = np.empty(n, dtype=object)
    uids[:] = [PolarUid(t.group_id, t.session_id) for t in traces]
    non_tensors = {
        "uid": uids,
        "session_id": np.array([t.session_id for t in traces], dtype=object),
        "trace_index": np.array([t.trace_index for t in traces], dtype=object),
        "status": np.array([t.status for t in traces], dtype=object),
        "orphan": np.array([t.orphan for t in traces], dtype=object),
        "crossed_weight_update": np.array([t.crossed_weight_update for t in traces], dtype=object),
        "policy_version": np.array([t.policy_version for t in traces], dtype=object),
    }
    if images is not None:
        non_tensors["multi_modal_data"] = _objects([{"images": imgs} if imgs else {} for imgs in images])
        if image_processor is not None:
            non_tensors["multi_modal_inputs"] = _objects(
                [_processor_inputs(torch, image_processor, imgs) if imgs else {} for imgs in images]
            )
    return tensors, non_tensors, {}


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _processor_inputs(torch: Any, image_processor: Any, images: list[Any]) -> dict[str, Any]:
    """One row's processor outputs as verl keeps them (``agent_loop.py`` ``_compute_multi_modal_inputs``)."""
    inputs = dict(image_processor(images=images, return_tensors="pt"))
    grid = inputs.get("image_grid_thw")
    if grid is not None:
        inputs["images_seqlens"] = torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0])
    return inputs


def to_data_proto(traces: Sequence[Trace], *, pad_token_id: int, **kwargs: Any) -> Any:
    """A real ``verl.DataProto`` (needs verl; see docs/trainers.md for a CPU install).

    ``pad_token_id`` fills the padding of ``prompts`` and ``responses``: the tokenizer's
    ``pad_token_id`` (151643, ``<|endoftext|>``, for Qwen3). Other keyword arguments
    (``max_prompt_length``, ``max_response_length``, ``logprobs_as_old_log_probs``) are
    ``to_verl_tensors``'s.
    """
    DataProto = import_extra("verl.protocol", extra="verl", needed_by="to_data_proto").DataProto

    tensors, non_tensors, meta_info = to_verl_tensors(traces, pad_token_id=pad_token_id, **kwargs)
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors, meta_info=meta_info)

"""NeMo RL at 7ea279ab: the adapter's batch through the steps of NeMo RL's GRPO loop after a rollout
(``grpo_train`` in nemo_rl/algorithms/grpo.py): ``extract_initial_prompt_messages`` with
``length``, ``batched_message_log_to_flat_message``, ``add_grpo_token_loss_masks_and_generation_logprobs``
and ``GRPOAdvantageEstimator``, imported from the clone $POLAR_NEMO_RL_CHECKOUT names
(support/checkouts.py; skipped with the reason when unset).

The numbers (support/trainer_shard.py, Polar's session rule, plain GRPO: NeMo RL's
``use_leave_one_out_baseline=False``): tools-0, tools-1, tools-2 get 0.577, 0.577, -1.155; the
split-0 traces 1.155, the four other split traces -0.577. NeMo RL groups by prompt tokens; every
split session's first traces share a prompt, and so do their second traces, so its own estimator
gives these numbers here. With the whole sequence as ``length`` every sample (each session's
sampled tokens made distinct, as a real policy's are) is its own group and every advantage 0.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from support.checkouts import checkout, nemo_rl_imports
from support.rows import row
from support.trainer_shard import PAD, POLAR_ADVANTAGE, scored_traces, shard_traces, with_distinct_samples

from polar_rollouts import Trace
from polar_rollouts.adapters.behaviour_logprobs import LogprobsError
from polar_rollouts.adapters.nemo_rl import PolarGRPOAdvantageEstimator, to_datum, to_message_log, to_repeated_batch
from polar_rollouts.adapters.rewards import MissingRewardError

checkout("POLAR_NEMO_RL_CHECKOUT")
with nemo_rl_imports():
    from nemo_rl.algorithms.advantage_estimator import AdvEstimatorConfig, GRPOAdvantageEstimator
    from nemo_rl.algorithms.grpo import (
        add_grpo_token_loss_masks_and_generation_logprobs,
        extract_initial_prompt_messages,
    )
    from nemo_rl.data.llm_message_utils import batched_message_log_to_flat_message


def batch_of(traces: list[Trace]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dry-run shard's raw logprobs with no params sent
        return to_repeated_batch(traces)


def nemo_grpo_step(batch: dict[str, Any], estimator: Any) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
    """grpo_train's lines from the prompt extraction to the advantages, in its order."""
    initial = extract_initial_prompt_messages(batch["message_log"], batch["length"])
    prompt_flat, _ = batched_message_log_to_flat_message(initial, pad_value_dict={"token_ids": PAD})
    prompt_ids = prompt_flat["token_ids"]
    add_grpo_token_loss_masks_and_generation_logprobs(batch["message_log"])
    flat, _ = batched_message_log_to_flat_message(
        batch["message_log"], pad_value_dict={"token_ids": PAD}, make_sequence_length_divisible_by=1
    )
    mask = flat["token_loss_mask"] * batch["loss_multiplier"].unsqueeze(-1)
    advantages = estimator.compute_advantage(
        prompt_ids=prompt_ids, rewards=batch["total_reward"], mask=mask, repeated_batch=batch
    )
    return flat, prompt_ids, advantages


def nemo_estimator() -> Any:
    return GRPOAdvantageEstimator(AdvEstimatorConfig(use_leave_one_out_baseline=False), {})


def test_a_missing_reward_is_refused_by_name() -> None:
    with pytest.raises(MissingRewardError, match="tools-3 trace 0"):
        batch_of(shard_traces())


def test_nemo_rls_flattening_and_masks_give_prompt_response_and_loss_mask() -> None:
    traces = scored_traces()
    flat, prompt_ids, _ = nemo_grpo_step(batch_of(traces), nemo_estimator())
    for i, t in enumerate(traces):
        n, p = len(t.input_ids), len(t.prompt_ids)
        assert flat["token_ids"][i, :n].tolist() == t.input_ids.tolist()
        assert flat["token_loss_mask"][i, :n].tolist() == [0] * p + t.loss_mask.tolist()
        assert flat["token_loss_mask"][i, n:].eq(0).all()
        assert t.response_logprobs is not None
        np.testing.assert_allclose(flat["generation_logprobs"][i, p:n].numpy(), t.response_logprobs)
        # The prompt NeMo RL groups by is the trace's prompt, nothing of its response.
        assert prompt_ids[i, :p].tolist() == t.prompt_ids.tolist() and prompt_ids[i, p:].eq(PAD).all()
    assert (flat["token_loss_mask"] == 0).logical_and(flat["token_ids"] != PAD).any()  # tool output


def test_nemo_rls_grpo_estimator_gives_polars_session_advantages() -> None:
    traces = with_distinct_samples(scored_traces())
    flat, _, advantages = nemo_grpo_step(batch_of(traces), nemo_estimator())
    expected = [POLAR_ADVANTAGE[t.session_id] for t in traces]
    np.testing.assert_allclose(advantages[:, 0].numpy(), expected, rtol=1e-5)
    # Polar's estimator (same interface) agrees on this shard.
    _, _, ours = nemo_grpo_step(batch_of(traces), PolarGRPOAdvantageEstimator())
    np.testing.assert_allclose(ours[:, 0].numpy(), expected, rtol=1e-5)


def test_polars_estimator_keeps_split_sessions_whose_later_prompts_differ() -> None:
    """A second trace's prompt holds its session's own history (different tool output in real
    runs). NeMo RL's estimator then sees each such trace alone and gives it 0; Polar's counts each
    session once in the task's group."""
    traces = with_distinct_samples(scored_traces())
    for t in traces:
        if t.group_id == "split" and t.trace_index == 1:
            t.prompt_ids = t.prompt_ids.copy()
            t.prompt_ids[-10] = 1000 + t.sample_index
    later = [i for i, t in enumerate(traces) if t.group_id == "split" and t.trace_index == 1]
    _, _, nemo = nemo_grpo_step(batch_of(traces), nemo_estimator())
    assert nemo[later, 0].tolist() == [0.0, 0.0, 0.0]
    _, _, ours = nemo_grpo_step(batch_of(traces), PolarGRPOAdvantageEstimator())
    np.testing.assert_allclose(ours[:, 0].numpy(), [POLAR_ADVANTAGE[t.session_id] for t in traces], rtol=1e-5)


def test_runs_split_at_every_mask_change_and_missing_logprobs_are_refused() -> None:
    t = Trace.from_row(row("s", response=[10, 11, 12, 13, 14], mask=[0, 1, 1, 0, 1], logprobs=[0, -1, -2, 0, -3], orphan=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = to_message_log(t, decode=lambda ids: ",".join(map(str, ids)))
        datum = to_datum(t, 7)
    assert [(m["role"], m["content"]) for m in log] == [
        ("user", "1,2,3"),
        ("environment", "10"),
        ("assistant", "11,12"),
        ("environment", "13"),
        ("assistant", "14"),
    ]
    assert [m["generation_logprobs"].tolist() for m in log if m["role"] == "assistant"] == [[-1.0, -2.0], [-3.0]]
    assert datum["length"] == 3 and datum["idx"] == 7 and datum["task_name"] == "t"
    assert datum["extra_env_info"]["orphan"] is True
    bare = Trace.from_row({**row("s2"), "response_logprobs": None})
    with pytest.raises(LogprobsError, match="s2 trace 0 has no logprobs"):
        to_message_log(bare)

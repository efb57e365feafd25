"""slime at 624b824a: the adapter's samples through slime's own Sample.from_dict,
RolloutManager._convert_samples_to_train_data (reward normalisation, loss masks, rollout ids) and
the loss reducer get_sum_of_sample_mean, imported from the clone $POLAR_SLIME_CHECKOUT names
(support/checkouts.py; skipped with the reason when unset).

The numbers (support/trainer_shard.py, Polar's session rule): tools-0, tools-1, tools-2 get 0.577,
0.577, -1.155; the split-0 traces 1.155, the four other split traces -0.577. slime's own
normalisation groups by position, so on this batch (9 rows, 2 prompts x 3 sessions) it normalises
the whole batch as one group; the adapter's post_process_rewards hook gives Polar's numbers.
"""

from __future__ import annotations

import warnings
from argparse import Namespace
from typing import Any

import numpy as np
import pytest
import torch
from support.checkouts import SLIME_STUBS, checkout, stubbed
from support.rows import row
from support.trainer_shard import POLAR_ADVANTAGE, scored_traces, shard_traces

from polar_rollouts import Trace
from polar_rollouts.adapters.rewards import MissingRewardError
from polar_rollouts.adapters.slime import to_slime_samples

checkout("POLAR_SLIME_CHECKOUT")
# GPU-only packages slime's modules import at the top; one GPU, no context parallelism.
with stubbed(*SLIME_STUBS, megatron__core__mpu={"get_context_parallel_world_size": lambda: 1}):
    from slime.backends.megatron_utils.cp_utils import get_sum_of_sample_mean
    from slime.ray.rollout import RolloutManager as RolloutActor
    from slime.utils.misc import load_function
    from slime.utils.ppo_utils import get_grpo_returns
    from slime.utils.types import Sample

HOOK = "polar_rollouts.adapters.slime.post_process_rewards"


def slime_args(**over: Any) -> Namespace:
    """The arguments slime's code reads on this path (slime/utils/arguments.py defaults)."""
    base = dict(
        advantage_estimator="grpo",
        rewards_normalization=True,
        grpo_std_normalization=True,
        n_samples_per_prompt=3,
        rollout_batch_size=2,
        reward_key=None,
        custom_reward_post_process_path=HOOK,
    )
    return Namespace(**{**base, **over})


def rollout_manager(args: Namespace) -> Any:
    """slime's RolloutManager class itself (under its ray.remote wrapper), with the attributes its
    __init__ sets for these methods; the rest of __init__ starts SGLang engines."""
    manager = RolloutActor.__ray_actor_class__.__new__(RolloutActor.__ray_actor_class__)
    manager.args = args
    path = args.custom_reward_post_process_path
    manager.custom_reward_post_process_func = load_function(path) if path is not None else None
    manager.custom_convert_samples_to_train_data_func = None
    return manager


def samples_of(traces: list[Trace]) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dry-run shard's raw logprobs with no params sent
        return [Sample.from_dict(d) for d in to_slime_samples(traces)]


def train_data(traces: list[Trace], **over: Any) -> tuple[list[Any], dict[str, Any]]:
    samples = samples_of(traces)
    return samples, rollout_manager(slime_args(**over))._convert_samples_to_train_data(samples)


def session_of(sample: Any) -> str:
    return sample.metadata["polar"]["session_id"]


def test_a_missing_reward_is_refused_by_name() -> None:
    with pytest.raises(MissingRewardError, match="tools-3 trace 0"):
        to_slime_samples(shard_traces())


def test_slimes_reward_normalisation_gives_polars_session_advantages() -> None:
    samples, data = train_data(scored_traces())
    expected = [POLAR_ADVANTAGE[session_of(s)] for s in samples]
    np.testing.assert_allclose(data["rewards"], expected, rtol=1e-5)
    assert data["raw_reward"] == [s.reward for s in samples]
    # slime's GRPO return: each sample's normalised reward on every response token.
    kl = [torch.zeros(n) for n in data["response_lengths"]]
    returns = get_grpo_returns(torch.tensor(data["rewards"]), kl)
    for r, want in zip(returns, expected):
        assert torch.allclose(r, torch.full_like(r, want), rtol=1e-5)
    # Without the hook slime normalises by position: 9 rows are not 2 x 3, so one group of 9.
    _, default = train_data(scored_traces(), custom_reward_post_process_path=None)
    raw = np.array(default["raw_reward"])
    np.testing.assert_allclose(default["rewards"], (raw - raw.mean()) / (raw.std(ddof=1) + 1e-6), rtol=1e-5)
    assert not np.allclose(default["rewards"], expected, atol=0.05)


def test_slimes_default_normalisation_agrees_when_every_session_is_one_trace() -> None:
    tools = [t for t in scored_traces() if t.group_id == "tools"]
    samples, data = train_data(tools, custom_reward_post_process_path=None, rollout_batch_size=1)
    np.testing.assert_allclose(data["rewards"], [POLAR_ADVANTAGE[session_of(s)] for s in samples], rtol=1e-5)


def test_slimes_loss_counts_each_session_once_and_never_trains_tool_output() -> None:
    samples, data = train_data(scored_traces())
    ids = data["rollout_ids"]
    by_session: dict[str, set[int]] = {}
    for s, rid in zip(samples, ids):
        by_session.setdefault(session_of(s), set()).add(rid)
    assert all(len(v) == 1 for v in by_session.values()) and len(set(ids)) == 6
    masks = [torch.tensor(m) for m in data["loss_masks"]]
    assert [m.tolist() for m in masks] == [s.loss_mask for s in samples]
    for s, m in zip(samples, masks):
        assert len(m) == s.response_length and s.tokens[-s.response_length :] == s.tokens[len(s.tokens) - len(m) :]
    reducer = get_sum_of_sample_mean(
        [len(s.tokens) for s in samples],
        data["response_lengths"],
        masks,
        [torch.tensor(x) for x in data["rollout_mask_sums"]],
        False,
    )
    ones = torch.ones(sum(data["response_lengths"]))
    # One token-weighted mean per rollout: 6 sessions, not 9 traces.
    assert reducer(ones).item() == pytest.approx(6.0)
    flat_mask = torch.cat(masks)
    assert (flat_mask == 0).any()
    moved = ones + 100.0 * (1 - flat_mask)
    assert reducer(moved).item() == pytest.approx(6.0)
    assert reducer(ones + flat_mask).item() == pytest.approx(12.0)


def test_sample_fields_status_and_versions() -> None:
    traces = [
        Trace.from_row(row("a-0", task="a", orphan=True, policy_version="3", policy_version_end="4")),
        Trace.from_row(row("b-0", task="b", status="TIMEOUT", reward=0.0)),
        Trace.from_row(row("a-1", task="a", sample=1, status="ERROR", reward=0.0)),
        Trace.from_row({**row("b-1", task="b", sample=1), "finish_reason": "length"}),
    ]
    samples = samples_of(traces)
    # Grouped: a's traces, then b's.
    assert [session_of(s) for s in samples] == ["a-0", "a-1", "b-0", "b-1"]
    g = [s.group_index for s in samples]
    assert g[0] == g[1] and g[2] == g[3] and g[0] != g[2]
    assert [s.status.value for s in samples] == ["completed", "failed", "aborted", "truncated"]
    assert samples[0].weight_versions == ["3", "4"] and samples[2].weight_versions == []
    assert samples[0].metadata["polar"]["orphan"] is True
    assert samples[0].tokens == [1, 2, 3, 10, 11, 12, 13] and samples[0].response_length == 4
    assert samples[0].rollout_log_probs == [-0.5, -0.25, 0.0, -1.0]


def test_ids_stay_unique_across_calls() -> None:
    """Samples built one group per call and concatenated (as slime's list[list[Sample]] invites):
    numbers restarting per call gave [0,1,2,0,0,1,1,2,2] and merged sessions of different groups
    in slime's loss."""
    from polar_rollouts import group_by

    samples = [s for group in group_by(scored_traces()).values() for s in samples_of(group)]
    manager = rollout_manager(slime_args())
    data = manager._convert_samples_to_train_data(samples)
    sessions = [session_of(s) for s in samples]
    ids = data["rollout_ids"]
    assert len(set(ids)) == len(set(sessions)) == 6
    assert all(len({i for i, x in zip(ids, sessions) if x == sess}) == 1 for sess in sessions)
    assert len({s.group_index for s in samples}) == 2 and len({s.index for s in samples}) == len(samples)
    np.testing.assert_allclose(data["rewards"], [POLAR_ADVANTAGE[x] for x in sessions], rtol=1e-5)
    reducer = get_sum_of_sample_mean(
        [len(s.tokens) for s in samples],
        data["response_lengths"],
        [torch.tensor(m) for m in data["loss_masks"]],
        [torch.tensor(x) for x in data["rollout_mask_sums"]],
        False,
    )
    assert reducer(torch.ones(sum(data["response_lengths"]))).item() == pytest.approx(6.0)

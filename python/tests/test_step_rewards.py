"""Process rewards from a real `polar run` (fixtures/step-rewards, made by its make.sh): the
evaluator's per-turn rewards in the shard, on the Trace, and where verl and slime take them.

Each session: turn 1 runs a command that works (step reward 1), turn 2 one that fails (0), turn 3
answers (no tool call, no step reward); the outcome reward is 1.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import trainer_module
from support.rows import row, write_parquet

from polar_rollouts import StepReward, read_shard, read_shard_file
from polar_rollouts.adapters.slime import to_slime_samples
from polar_rollouts.adapters.verl import to_verl_tensors

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "step-rewards" / "steps.parquet"
PAD = 151643
core_algos = trainer_module("verl.trainer.ppo.core_algos", "verl is installed by scripts/setup-python.sh")
verl_config = trainer_module("verl.trainer.config", "verl is installed by scripts/setup-python.sh")


def traces():
    return read_shard_file(FIXTURE)


def test_the_shard_carries_the_step_rewards_on_the_turns() -> None:
    ts = traces()
    assert [t.session_id for t in ts] == ["steps-0", "steps-1"]
    for t in ts:
        assert t.reward == 1.0
        assert t.step_rewards is not None
        turns = [(s.start, s.end) for s in t.version_spans]
        assert [(s.start, s.end) for s in t.step_rewards] == turns[:2]
        assert [s.reward for s in t.step_rewards] == [1.0, 0.0]
        # Each reward sits on the last token of its turn, nowhere else.
        tokens = t.step_reward_tokens()
        assert tokens[turns[0][1] - 1] == 1.0 and tokens.sum() == 1.0
        assert all(t.loss_mask[s.start : s.end].all() for s in t.step_rewards)


def test_an_older_shard_and_a_null_column_read_none(tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    write_parquet(str(tmp_path / "trajectories" / "t.parquet"), [row("s-0")])
    (old,) = read_shard(tmp_path, "t")
    assert old.step_rewards is None and not old.step_reward_tokens().any()
    from polar_rollouts import parse_shard_jsonl

    (t,) = parse_shard_jsonl(json.dumps(row("s", step_rewards=None)) + "\n")
    assert t.step_rewards is None
    (t,) = parse_shard_jsonl(json.dumps(row("s", step_rewards='[{"start": 0, "end": 2, "reward": 0.5}]')) + "\n")
    assert t.step_rewards == [StepReward(0, 2, 0.5)]


def test_a_step_reward_outside_the_response_is_refused() -> None:
    from polar_rollouts import ShardFormatError, parse_shard_jsonl

    with pytest.raises(ShardFormatError, match=r"step reward span \[2, 9\) outside the response"):
        parse_shard_jsonl(json.dumps(row("s", step_rewards=[{"start": 2, "end": 9, "reward": 1}])) + "\n")


def verl_tensors(**kwargs: object):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dry-run shard's raw logprobs
        return to_verl_tensors(traces(), pad_token_id=PAD, **kwargs)[0]


def test_verl_gets_them_in_rm_scores_at_each_turns_last_token_only_when_asked() -> None:
    t = traces()[0]
    plain = verl_tensors()["rm_scores"]
    assert plain[0].nonzero().flatten().tolist() == [len(t.response_ids) - 1]
    scores = verl_tensors(step_rewards=True)["rm_scores"]
    turn1_end = t.version_spans[0].end
    assert scores[0, turn1_end - 1].item() == 1.0
    assert scores[0, len(t.response_ids) - 1].item() == 1.0  # the outcome, unchanged
    assert scores[0].sum().item() == 2.0  # outcome 1 + steps 1 + 0


def test_verls_reinforce_plus_plus_credits_each_turn_by_its_own_reward() -> None:
    tensors = verl_tensors(step_rewards=True)
    _, returns = core_algos.compute_reinforce_plus_plus_outcome_advantage(
        token_level_rewards=tensors["rm_scores"],
        response_mask=tensors["response_mask"],
        config=verl_config.AlgoConfig(adv_estimator="reinforce_plus_plus", gamma=1.0),
    )
    t = traces()[0]
    starts = [s.start for s in t.version_spans]
    # Turn 1 sees its own 1, turn 2's 0 and the outcome 1; turns 2 and 3 only the outcome.
    assert [returns[0, s].item() for s in starts] == [2.0, 1.0, 1.0]


def test_slime_samples_carry_them_in_metadata() -> None:
    from support.checkouts import SLIME_STUBS, checkout, stubbed

    checkout("POLAR_SLIME_CHECKOUT")
    with stubbed(*SLIME_STUBS):
        from slime.utils.types import Sample

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = [Sample.from_dict(d) for d in to_slime_samples(traces())]
    t = traces()[0]
    spans = samples[0].metadata["polar"]["step_rewards"]
    assert spans == [{"start": s.start, "end": s.end, "reward": s.reward} for s in t.step_rewards or []]
    # slime's reward stays the outcome: its Sample has no per-token reward.
    assert samples[0].reward == 1.0
    assert np.isclose(sum(s["reward"] for s in spans), 1.0)
    assert isinstance(torch.tensor(samples[0].loss_mask), torch.Tensor)

"""verl 0.9.1: the adapter's DataProto through verl's own reward and advantage code.

The numbers (support/trainer_shard.py): tools 0.577, 0.577, -1.155; split 1.155 on both split-0
traces, -0.577 on the four others (each session counted once). verl's built-in ``grpo`` counts
rows and gives 1.291 / -0.646 on split: that is why the adapter ships ``polar_grpo``.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch
from conftest import trainer_module
from support.rows import row
from support.trainer_shard import PAD, PER_ROW_ADVANTAGE, POLAR_ADVANTAGE, scored_traces, shard_traces

from polar_rollouts import Trace
from polar_rollouts.adapters.behaviour_logprobs import LogprobsError
from polar_rollouts.adapters.rewards import MissingRewardError
from polar_rollouts.adapters.verl import to_data_proto, to_verl_tensors

verl_protocol = trainer_module("verl.protocol", "verl is installed by scripts/setup-python.sh (--no-deps)")
core_algos = trainer_module("verl.trainer.ppo.core_algos", "verl is installed by scripts/setup-python.sh")
verl_reward = trainer_module("verl.trainer.ppo.reward", "verl is installed by scripts/setup-python.sh")
verl_config = trainer_module("verl.trainer.config", "verl is installed by scripts/setup-python.sh")


def proto(traces: list[Trace], **kwargs: object) -> object:
    with warnings.catch_warnings():
        # The dry-run shard records raw_logprobs with no params sent: warned, not refused.
        warnings.simplefilter("ignore")
        return to_data_proto(traces, pad_token_id=PAD, **kwargs)


def verl_advantages(batch: object, estimator: str) -> torch.Tensor:
    """What verl's trainer does with a batch from the agent loop: ``extract_reward`` gives the
    reward tensor, which becomes ``token_level_scores`` and (no KL in the reward)
    ``token_level_rewards``; ``compute_advantage`` (ray_trainer.py) then calls GRPO directly, or a
    registered estimator with these keyword arguments."""
    reward_tensor, _ = verl_reward.extract_reward(batch)
    batch.batch["token_level_scores"] = reward_tensor
    batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
    if estimator == "grpo":
        advantages, _ = core_algos.compute_grpo_outcome_advantage(
            token_level_rewards=batch.batch["token_level_rewards"],
            response_mask=batch.batch["response_mask"],
            index=batch.non_tensor_batch["uid"],
            norm_adv_by_std_in_grpo=True,
        )
        return advantages
    fn = core_algos.get_adv_estimator_fn(estimator)
    advantages, _ = fn(
        token_level_rewards=batch.batch["token_level_rewards"],
        response_mask=batch.batch["response_mask"],
        config=verl_config.AlgoConfig(adv_estimator=estimator),
        index=batch.non_tensor_batch["uid"],
    )
    return advantages


def per_trace(advantages: torch.Tensor, mask: torch.Tensor) -> list[float]:
    """The one value verl broadcast over each row's trainable tokens (checked to be one value)."""
    out = []
    for a, m in zip(advantages, mask):
        values = a[m == 1].unique()
        assert len(values) == 1
        out.append(values.item())
    return out


def test_a_missing_reward_is_refused_by_name() -> None:
    with pytest.raises(MissingRewardError, match=r"tools-3 trace 0.*filter_traces"):
        proto(shard_traces())


def test_verls_own_reward_and_advantage_code_give_polars_session_advantages() -> None:
    import polar_rollouts.adapters.verl_estimator  # noqa: F401  (registers polar_grpo)

    traces = scored_traces()
    batch = proto(traces)
    mask = batch.batch["response_mask"]
    expected = [POLAR_ADVANTAGE[t.session_id] for t in traces]
    ours = verl_advantages(batch, "polar_grpo")
    np.testing.assert_allclose(per_trace(ours, mask), expected, rtol=1e-5)
    # Tool output (mask 0) gets no advantage: it is not trained on.
    assert ours[mask == 0].eq(0).all()
    # verl's built-in grpo agrees where every session is one trace, and counts split-0 twice.
    builtin = per_trace(verl_advantages(proto(traces), "grpo"), mask)
    for t, value in zip(traces, builtin):
        want = PER_ROW_ADVANTAGE.get(t.session_id, POLAR_ADVANTAGE[t.session_id])
        assert value == pytest.approx(want, rel=1e-5), t.session_id
    # The uid survives verl's own batch operations (selection, concatenation) with its session.
    picked = batch.select_idxs(np.array([t.session_id != "split-1" for t in traces]))
    both = verl_protocol.DataProto.concat([picked, batch.select_idxs(np.array([t.session_id == "split-1" for t in traces]))])
    assert {u.session_id for u in both.non_tensor_batch["uid"]} == {t.session_id for t in traces}
    # And Ray's pickling between driver and workers.
    again = pickle.loads(pickle.dumps(batch.non_tensor_batch["uid"]))
    assert [(str(u), u.session_id) for u in again] == [(t.group_id, t.session_id) for t in traces]


def test_tool_output_is_attended_but_not_trained() -> None:
    """As verl's multi-turn agent loop lays a tool turn out: attention 1, response_mask 0, and
    verl's own loss aggregation ignores whatever stands at those positions."""
    traces = scored_traces()
    batch = proto(traces)
    p_len = batch.batch["prompts"].shape[1]
    for i, t in enumerate(traces):
        rl = len(t.response_ids)
        assert batch.batch["attention_mask"][i, p_len : p_len + rl].eq(1).all()
        assert batch.batch["response_mask"][i, :rl].tolist() == t.loss_mask.tolist()
        np.testing.assert_allclose(batch.batch["rollout_log_probs"][i, :rl].numpy(), t.response_logprobs)
        # The reward sits on the last response token, where the agent loop puts rm_scores.
        assert batch.batch["rm_scores"][i].nonzero().flatten().tolist() in ([rl - 1], [])
        assert batch.batch["rm_scores"][i].sum().item() == pytest.approx(t.reward)
    mask = batch.batch["response_mask"]
    loss_mat = torch.randn(mask.shape)
    moved = loss_mat + 100.0 * (1 - mask)
    for mode in ("token-mean", "seq-mean-token-mean"):
        a = core_algos.agg_loss(loss_mat=loss_mat, loss_mask=mask, loss_agg_mode=mode)
        b = core_algos.agg_loss(loss_mat=moved, loss_mask=mask, loss_agg_mode=mode)
        assert torch.equal(a, b), mode


def test_layout_limits_and_old_log_probs() -> None:
    traces = [
        Trace.from_row(row("a-0", task="a", reward=1.0, prompt=[1, 2, 3, 4], response=[5, 6, 7], mask=[1, 0, 1], logprobs=[-1.0, 0.0, -2.0], metadata='{"sampling":[{"logprobs_mode":"processed_logprobs","params":{"temperature":0.7}}]}')),
        Trace.from_row(row("a-1", task="a", sample=1, reward=0.0, prompt=[1, 2], response=[8, 9, 10, 11, 12], mask=[1, 1, 0, 0, 1], logprobs=[-0.5, -0.5, 0.0, 0.0, -0.1], metadata='{"sampling":[{"logprobs_mode":"processed_logprobs","params":{}}]}')),
    ]
    batch = to_data_proto(traces, pad_token_id=PAD)
    assert isinstance(batch, verl_protocol.DataProto)
    assert batch.batch["input_ids"].shape == (2, 9)
    assert batch.batch["prompts"][0].tolist() == [1, 2, 3, 4] and batch.batch["prompts"][1].tolist() == [PAD, PAD, 1, 2]
    assert batch.batch["position_ids"][1, 2].item() == 0 and batch.batch["position_ids"][1, 8].item() == 6
    assert "token_level_scores" not in batch.batch.keys()
    with pytest.raises(ValueError, match="response has 5 tokens, over the limit 4"):
        to_verl_tensors(traces, pad_token_id=PAD, max_response_length=4)
    tensors, _, _ = to_verl_tensors(traces, pad_token_id=PAD, max_prompt_length=8, logprobs_as_old_log_probs=True)
    assert tensors["prompts"].shape == (2, 8)
    assert torch.equal(tensors["old_log_probs"], tensors["rollout_log_probs"])


def test_missing_or_raw_logprobs_are_refused() -> None:
    hot = '{"sampling":[{"logprobs_mode":"raw_logprobs","params":{"temperature":0.6}}]}'
    t = Trace.from_row(row("a-0", task="a", metadata=hot))
    with pytest.raises(LogprobsError, match=r"temperature=0.6.*--logprobs-mode processed_logprobs"):
        to_verl_tensors([t], pad_token_id=PAD)
    with pytest.warns(UserWarning, match="--logprobs-mode processed_logprobs"):
        to_verl_tensors([t], pad_token_id=PAD, raw_logprobs="warn")
    bare = Trace.from_row({**row("a-1", task="a"), "response_logprobs": None})
    with pytest.raises(LogprobsError, match="a-1 trace 0 has no logprobs"):
        to_verl_tensors([bare], pad_token_id=PAD)
    tensors, _, _ = to_verl_tensors([bare], pad_token_id=PAD, rollout_logprobs=False)
    assert "rollout_log_probs" not in tensors

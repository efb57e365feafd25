"""polar_rollouts.plugins.verl_agent_loop inside verl 0.9.1's own code, against `polar serve` with the
dry-run policy: verl's RLHFDataset and collate_fn, the trainer's uid / repeat / union steps, the
real ``AgentLoopWorker.generate_sequences`` (constructed directly: the class ``AgentLoopManager``
wraps in ``ray.remote``, so no Ray cluster) with the shipped agent-loop YAML and its
``_postprocess``, ``extract_reward``, ``compute_advantage`` (ray_trainer.py) with ``grpo`` and
``polar_grpo``, then verl's vanilla policy loss and one AdamW step on a tiny Qwen3.

first-primes: sample i follows the dry-run script's alternative i (rewards 1, 2/3, 0), so one
Polar task per verl uid gives advantages 0.873, 0.218, -1.091 (GRPO, std-normalised); rows of one
prompt split into 1-sample tasks would all follow alternative 0 (all rewards 1, advantages 0).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import ROOT, trainer_module

from polar_rollouts.groups import session_grpo_advantages

trainer_module("hydra", "verl's agent loop needs the [verl] extra (scripts/setup-python.sh)")
agent_loop = trainer_module("verl.experimental.agent_loop.agent_loop", "verl is installed by scripts/setup-python.sh")
ray_trainer = trainer_module("verl.trainer.ppo.ray_trainer", "verl is installed by scripts/setup-python.sh")
from verl.protocol import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.reward import extract_reward  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402

import polar_rollouts.adapters.verl_estimator  # noqa: E402,F401  (registers polar_grpo)
from polar_rollouts.plugins import verl_agent_loop as plugin  # noqa: E402
from polar_rollouts.plugins.task_group import PluginError  # noqa: E402

N = 3
PRIMES = json.loads(
    next(line for line in (ROOT / "examples" / "grpo-tasks.jsonl").read_text().splitlines() if '"first-primes"' in line)
)
REWARDS = [1.0, 2 / 3, 0.0]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.qwen3 import TOKENIZER_JSON, tiny_qwen3
    from transformers import PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny-qwen3")
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_JSON), pad_token="<|endoftext|>", eos_token="<|im_end|>")
    tokenizer.save_pretrained(out)
    tiny_qwen3(seed=3).save_pretrained(out)
    return out


def verl_config(model: Path, *overrides: str) -> Any:
    from hydra import compose, initialize_config_dir

    import verl

    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model}",
                "actor_rollout_ref.rollout.name=vllm",
                f"actor_rollout_ref.rollout.n={N}",
                "data.max_prompt_length=1024",
                "data.max_response_length=512",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={plugin.AGENT_LOOPS_YAML}",
                "actor_rollout_ref.rollout.agent.default_agent_loop=polar",
                "trainer.use_v1=false",
                *overrides,
            ],
        )


def dataset_batch(tmp_path: Path, config: Any, tasks: list[dict[str, Any]]) -> DataProto:
    """Two prompts through verl's own dataset and collate_fn, each row naming its Polar task."""
    import pandas as pd

    rows = [
        {
            "prompt": [{"role": "user", "content": t["instruction"]}],
            "data_source": "polar",
            "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {"index": i, "polar_task_id": t["task_id"]},
        }
        for i, t in enumerate(tasks)
    ]
    path = tmp_path / "train.parquet"
    pd.DataFrame(rows).to_parquet(path)
    from verl.utils import hf_tokenizer

    dataset = RLHFDataset(data_files=[str(path)], tokenizer=hf_tokenizer(config.actor_rollout_ref.model.path), config=config.data)
    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))


def rollout(config: Any, batch: DataProto) -> DataProto:
    """ray_trainer.fit's steps from the uid to the union, with the real worker in place of its
    ray.remote handle (the handle's generate_sequences is this method)."""
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    gen = DataProto(batch=None, non_tensor_batch=dict(batch.non_tensor_batch), meta_info={"global_steps": 1})
    gen = gen.repeat(repeat_times=N, interleave=True)
    worker = agent_loop.AgentLoopWorker(config, None)
    out = asyncio.run(worker.generate_sequences(gen))
    full = batch.repeat(repeat_times=N, interleave=True)
    full.non_tensor_batch.pop("raw_prompt", None)
    return full.union(out)


def advantages(batch: DataProto, estimator: str) -> list[float]:
    reward, _ = extract_reward(batch)
    batch.batch["token_level_scores"] = reward
    batch.batch["token_level_rewards"] = reward
    algo = ray_trainer.AlgoConfig(adv_estimator=estimator) if hasattr(ray_trainer, "AlgoConfig") else None
    from verl.trainer.config import AlgoConfig

    out = ray_trainer.compute_advantage(batch, adv_estimator=estimator, config=algo or AlgoConfig(adv_estimator=estimator))
    mask = out.batch["response_mask"]
    values = []
    for a, m in zip(out.batch["advantages"], mask):
        one = a[m == 1].unique()
        assert len(one) == 1
        values.append(one.item())
    return values


def one_optimizer_step(model_dir: Path, batch: DataProto) -> float:
    """verl's vanilla PPO loss over the batch (old = the engine's logprobs: bypass mode), one step."""
    from transformers import AutoModelForCausalLM
    from verl.utils.torch_functional import logprobs_from_logits

    model = AutoModelForCausalLM.from_pretrained(model_dir).train()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    b = batch.batch
    r_len = b["responses"].shape[1]
    logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], position_ids=b["position_ids"]).logits
    logp = logprobs_from_logits(logits[:, -r_len - 1 : -1, :], b["responses"])
    loss_fn = core_algos.get_policy_loss_fn("vanilla")
    from verl.workers.config import ActorConfig

    actor = ActorConfig(strategy="fsdp", ppo_micro_batch_size_per_gpu=1, rollout_n=N)
    loss, _ = loss_fn(
        old_log_prob=b["rollout_log_probs"],
        log_prob=logp,
        advantages=b["advantages"],
        response_mask=b["response_mask"],
        loss_agg_mode="token-mean",
        config=actor,
    )
    loss.backward()
    opt.step()
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
    return float(loss)


@pytest.fixture()
def polar_env(polar_serve: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tasks.jsonl"
    split = {**PRIMES, "task_id": "primes-split", "builder": {"strategy": "per_request"}}
    path.write_text("\n".join(json.dumps(t) for t in (PRIMES, split)) + "\n")
    monkeypatch.setenv("POLAR_CONTROL_URL", polar_serve["proxy_url"])
    monkeypatch.setenv("POLAR_CONTROL_TOKEN", polar_serve["token"])
    monkeypatch.setenv("POLAR_TASKS", str(path))
    return path


def test_verls_own_worker_runs_one_polar_group_per_uid_and_trains(polar_env: Path, model_dir: Path, tmp_path: Path) -> None:
    config = verl_config(model_dir)
    prompts = dataset_batch(tmp_path, config, [PRIMES, PRIMES])
    batch = rollout(config, prompts)
    assert len(batch) == 2 * N
    uids = batch.non_tensor_batch["uid"]
    tasks = batch.non_tensor_batch["polar_task_id"]
    # One Polar task per verl group (uid), N sessions each, and never one task for two uids.
    for u in set(uids):
        rows = [i for i in range(len(batch)) if uids[i] == u]
        assert len(rows) == N and len({tasks[i] for i in rows}) == 1
        assert sorted(batch.non_tensor_batch["polar_session_id"][i] for i in rows) == [f"{tasks[rows[0]]}-{k}" for k in range(N)]
    assert len(set(tasks)) == 2
    rewards = batch.batch["rm_scores"].sum(-1).tolist()
    expected = session_grpo_advantages([str(u) for u in uids], list(batch.non_tensor_batch["polar_session_id"]), np.array(rewards))
    assert sorted(rewards) == pytest.approx(sorted(REWARDS * 2))
    assert max(abs(expected)) > 0.5  # the group's samples differ, so advantages do
    # verl's response_mask is Polar's loss mask: tool output (mask 0) inside the response.
    assert (batch.batch["response_mask"] == 0).logical_and(batch.batch["attention_mask"][:, -batch.batch["responses"].shape[1] :] == 1).any()
    grpo = advantages(batch, "grpo")
    np.testing.assert_allclose(grpo, expected, rtol=1e-5)
    ours = advantages(batch, "polar_grpo")
    np.testing.assert_allclose(ours, expected, rtol=1e-5)
    loss = one_optimizer_step(model_dir, batch)
    assert np.isfinite(loss)


def test_refusals_name_the_fix(polar_env: Path, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = verl_config(model_dir)
    # A session split into two traces on the legacy worker (one output per row).
    with pytest.raises(PluginError, match="trainer.use_v1=true"):
        rollout(config, dataset_batch(tmp_path, config, [{**PRIMES, "task_id": "primes-split"}]))
    # A row naming no task in the task file.
    with pytest.raises(PluginError, match="'nope' is not a task_id of"):
        rollout(config, dataset_batch(tmp_path, config, [{**PRIMES, "task_id": "nope"}]))
    # No control API configured.
    monkeypatch.delenv("POLAR_CONTROL_URL")
    with pytest.raises(PluginError, match="POLAR_CONTROL_URL and POLAR_CONTROL_TOKEN"):
        rollout(config, dataset_batch(tmp_path, config, [PRIMES]))

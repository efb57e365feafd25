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
    # A task sampling at another temperature than verl's actor assumes.
    hot = {**PRIMES, "task_id": "hot", "agent": {**PRIMES["agent"], "sampling": {"temperature": 0.5}}}
    monkeypatch.setenv("POLAR_TASKS", str(tmp_path / "hot.jsonl"))
    (tmp_path / "hot.jsonl").write_text(json.dumps(PRIMES) + "\n" + json.dumps(hot) + "\n")
    with pytest.raises(PluginError, match=r"agent.sampling.temperature=0.5 differs from the trainer's 1.0"):
        rollout(config, dataset_batch(tmp_path, config, [hot]))
    # No control API configured.
    monkeypatch.delenv("POLAR_CONTROL_URL")
    with pytest.raises(PluginError, match="POLAR_CONTROL_URL and POLAR_CONTROL_TOKEN"):
        rollout(config, dataset_batch(tmp_path, config, [PRIMES]))


class FakeTransferQueue:
    """The four calls verl's v1 agent-loop worker makes on TransferQueue (not installable here),
    keeping what it puts, so verl's own AgentLoopWorkerTQ code runs around the agent loop."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.status: dict[str, str] = {}

    def module(self) -> Any:
        import types

        class Module(types.ModuleType):
            # Names verl's v1 package imports but this path never calls (KVBatchMeta, ...).
            def __getattr__(self, name: str) -> Any:
                if name.startswith("__"):
                    raise AttributeError(name)
                return type(name, (), {})

        tq = Module("transfer_queue")
        tq.init = lambda *a, **k: None  # type: ignore[attr-defined]
        tq.async_kv_put = self.kv_put  # type: ignore[attr-defined]
        tq.async_kv_batch_put = self.kv_batch_put  # type: ignore[attr-defined]
        return tq

    async def kv_put(self, key: str, partition_id: str, tag: dict[str, Any] | None = None, **_: Any) -> None:
        self.status[key] = (tag or {}).get("status", "")

    async def kv_batch_put(self, keys: list[str], fields: Any, tags: list[dict[str, Any]], partition_id: str) -> None:
        for i, key in enumerate(keys):
            row = fields[i]
            self.rows[key] = {k: row[k] for k in ("response_mask", "rm_scores", "uid")}


def v1_modules(fake: FakeTransferQueue) -> tuple[Any, Any]:
    """verl's v1 worker and advantage modules, imported with the fake TransferQueue."""
    import importlib
    import sys

    sys.modules["transfer_queue"] = fake.module()
    try:
        for name in ("verl.trainer.ppo.v1.agent_loop_tq", "verl.trainer.ppo.v1.utils"):
            sys.modules.pop(name, None)
        return importlib.import_module("verl.trainer.ppo.v1.agent_loop_tq"), importlib.import_module("verl.trainer.ppo.v1.utils")
    finally:
        del sys.modules["transfer_queue"]


def test_verls_v1_worker_takes_every_trace_and_its_grpo_counts_each_session_once(
    polar_env: Path, model_dir: Path, tmp_path: Path
) -> None:
    """trainer.use_v1 (verl's default): AgentLoopWorkerTQ._run_prompt starts the n sessions of a
    uid with session_id 0..n-1; the agent loop returns each session's traces, stored under
    ``{uid}_{session_id}_{i}``; compute_advantage_for_multi_trajectories with grpo then gives
    Polar's session rule on split sessions. polar_grpo is refused there, naming grpo."""
    from verl.trainer.config import AlgoConfig

    fake = FakeTransferQueue()
    agent_loop_tq, v1_utils = v1_modules(fake)
    config = verl_config(model_dir, "trainer.use_v1=true")
    worker = agent_loop_tq.AgentLoopWorkerTQ.__ray_actor_class__(config, None)
    prompts = dataset_batch(tmp_path, config, [{**PRIMES, "task_id": "primes-split"}])
    prompt = {k: v[0] for k, v in prompts.non_tensor_batch.items()}
    prompt.update(uid=str(uuid.uuid4()), agent_name="polar", global_steps=1)
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}
    asyncio.run(worker._run_prompt(dict(prompt), {"temperature": 1.0}, trajectory=trajectory))
    assert fake.status[prompt["uid"]] == "finished"
    keys = sorted(fake.rows)
    assert keys == sorted(f"{prompt['uid']}_{s}_{i}" for s in range(N) for i in range(2))  # 3 sessions x 2 traces
    width = max(len(fake.rows[k]["response_mask"]) for k in keys)

    def padded(name: str, dtype: torch.dtype) -> torch.Tensor:
        out = torch.zeros((len(keys), width), dtype=dtype)
        for j, k in enumerate(keys):
            value = torch.as_tensor(fake.rows[k][name])
            out[j, : len(value)] = value
        return out

    data = DataProto.from_dict(
        tensors={"response_mask": padded("response_mask", torch.long), "token_level_rewards": padded("rm_scores", torch.float32)},
        non_tensors={"uid": np.array([str(fake.rows[k]["uid"]) for k in keys], dtype=object)},
    )
    out = v1_utils.compute_advantage_for_multi_trajectories(
        data, batch_keys=keys, adv_estimator="grpo", num_repeat=N, config=AlgoConfig(adv_estimator="grpo")
    )
    rewards = data.batch["token_level_rewards"].sum(-1).numpy()
    sessions = [k.rsplit("_", 1)[0] for k in keys]
    want = session_grpo_advantages([prompt["uid"]] * len(keys), sessions, rewards)
    got = [a[m == 1].unique().item() for a, m in zip(out.batch["advantages"], out.batch["response_mask"])]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert max(abs(want)) > 0.5
    # verl's own grpo over the rows (each trace a row) would count every session twice: not the same.
    rows = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=data.batch["token_level_rewards"], response_mask=data.batch["response_mask"], index=data.non_tensor_batch["uid"]
    )[0]
    assert not np.allclose([a[m == 1].unique().item() for a, m in zip(rows, data.batch["response_mask"])], want, atol=0.05)
    # polar_grpo on v1: refused up front, naming the estimator to use.
    config = verl_config(model_dir, "trainer.use_v1=true", "algorithm.adv_estimator=polar_grpo")
    worker = agent_loop_tq.AgentLoopWorkerTQ.__ray_actor_class__(config, None)
    with pytest.raises(PluginError, match="algorithm.adv_estimator=grpo"):
        asyncio.run(worker._run_agent_loop({}, trajectory, agent_name="polar", session_id=0, **{k: v for k, v in prompt.items() if k != "agent_name"}))

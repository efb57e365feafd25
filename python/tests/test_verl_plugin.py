"""polar_rollouts.plugins.verl_agent_loop inside verl 0.9.1's own code, against its own `polar serve`
(which starts routing to its dry-run policy) and a second dry-run policy standing for the engine
verl started, known to the agent loop only through verl's own request router (a real
``GlobalRequestLoadBalancer`` actor from ``get_router_handle``, behind verl's ``LLMServerClient``) on
a local Ray. Legacy worker: verl's RLHFDataset and collate_fn, the trainer's uid / repeat / union
steps, the real ``AgentLoopWorker.generate_sequences`` (constructed directly: the class
``AgentLoopManager`` wraps in ``ray.remote``) with the shipped agent-loop YAML and its
``_postprocess``, ``extract_reward``, ``compute_advantage`` (ray_trainer.py) with ``grpo`` and
``polar_grpo``, then verl's vanilla policy loss and one AdamW step on a tiny Qwen3. v1 (verl's
default): verl's real TransferQueue (transferqueue 0.1.11) and the v1 trainer's own methods from
the dataloader to the metrics (below).

first-primes: sample i follows the dry-run script's alternative i (rewards 1, 2/3, 0), so one
Polar task per verl uid gives advantages 0.873, 0.218, -1.091 (GRPO, std-normalised); rows of one
prompt split into 1-sample tasks would all follow alternative 0 (all rewards 1, advantages 0).
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import ROOT, polar_policy, polar_serve_at, trainer_module

from polar_rollouts.client import ControlClient
from polar_rollouts.groups import session_grpo_advantages

trainer_module("hydra", "verl's agent loop needs the [verl] extra (scripts/setup-python.sh)")
agent_loop = trainer_module("verl.experimental.agent_loop.agent_loop", "verl is installed by scripts/setup-python.sh")
ray_trainer = trainer_module("verl.trainer.ppo.ray_trainer", "verl is installed by scripts/setup-python.sh")
tq = trainer_module("transfer_queue", "verl's v1 trainer needs TransferQueue (scripts/setup-python.sh installs it)")
import ray  # noqa: E402
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


def rollout(config: Any, batch: DataProto, llm_client: Any) -> DataProto:
    """ray_trainer.fit's steps from the uid to the union, with the real worker in place of its
    ray.remote handle (the handle's generate_sequences is this method)."""
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    gen = DataProto(batch=None, non_tensor_batch=dict(batch.non_tensor_batch), meta_info={"global_steps": 1})
    gen = gen.repeat(repeat_times=N, interleave=True)
    worker = agent_loop.AgentLoopWorker(config, llm_client)
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


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray with verl's TransferQueue on it (one storage unit; its actors ask 1 CPU each)."""
    from omegaconf import OmegaConf

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray kills workers when the whole machine is above 95% memory, whoever uses it (other test
    # processes on a shared CI box); these actors hold a few rows, so that monitor is off here.
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    ray.init(
        num_cpus=4, object_store_memory=100 << 20, include_dashboard=False, log_to_driver=False, configure_logging=False
    )
    try:
        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        yield
    finally:
        tq.close()
        ray.shutdown()


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    """The engine verl started (a dry-run policy of its own: what it was asked is readable)."""
    with polar_policy() as url:
        yield url


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A `polar serve` of this module's own: the plug-in replaces its replicas."""
    with polar_serve_at(tmp_path_factory.mktemp("verl-serve")) as info:
        yield info


def verl_client(config: Any, servers: list[str]) -> Any:
    """What verl hands agent loops as ``server_manager``: its LLMServerClient over its own router
    actor, holding the servers' ``host:port`` as verl's LLMServerManager registers them."""
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.router import get_router_handle

    balancer = get_router_handle(servers={s: None for s in servers})
    return LLMServerClient(config, load_balancer_handle=balancer)


def host_port(url: str) -> str:
    return url.removeprefix("http://")


def engine_requests(url: str) -> int:
    """The chat completions the engine answered so far."""
    with urllib.request.urlopen(f"{url}/debug/requests", timeout=10) as answer:
        return int(json.load(answer)["chat_completions"])


@pytest.fixture()
def polar_env(serve: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tasks.jsonl"
    split = {**PRIMES, "task_id": "primes-split", "builder": {"strategy": "per_request"}}
    path.write_text("\n".join(json.dumps(t) for t in (PRIMES, split)) + "\n")
    monkeypatch.setenv("POLAR_CONTROL_URL", serve["proxy_url"])
    monkeypatch.setenv("POLAR_CONTROL_TOKEN", serve["token"])
    monkeypatch.setenv("POLAR_TASKS", str(path))
    return path


def test_verls_own_worker_routes_to_verls_engine_runs_one_polar_group_per_uid_and_trains(
    local_ray: None, engine: str, serve: dict[str, Any], polar_env: Path, model_dir: Path, tmp_path: Path
) -> None:
    control = ControlClient(serve["proxy_url"], serve["token"])
    before = [r["url"] for r in control.replicas()]
    assert before != [engine]  # `polar serve` without --upstream routes to its own dry-run policy
    asked = engine_requests(engine)
    config = verl_config(model_dir)
    prompts = dataset_batch(tmp_path, config, [PRIMES, PRIMES])
    batch = rollout(config, prompts, verl_client(config, [host_port(engine)]))
    # The plug-in took verl's servers from verl's router: Polar routes there only, and the
    # sessions' model calls reached that engine.
    assert [r["url"] for r in control.replicas()] == [engine]
    assert engine_requests(engine) > asked
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


def test_refusals_name_the_fix(
    local_ray: None, engine: str, polar_env: Path, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = verl_config(model_dir)
    client = verl_client(config, [host_port(engine)])
    # A session split into two traces on the legacy worker (one output per row).
    with pytest.raises(PluginError, match="trainer.use_v1=true"):
        rollout(config, dataset_batch(tmp_path, config, [{**PRIMES, "task_id": "primes-split"}]), client)
    # A row naming no task in the task file.
    with pytest.raises(PluginError, match="'nope' is not a task_id of"):
        rollout(config, dataset_batch(tmp_path, config, [{**PRIMES, "task_id": "nope"}]), client)
    # No engine of verl's to route to: never the dry-run policy or whatever Polar routes to now.
    with pytest.raises(PluginError, match="reports no inference engine"):
        rollout(config, dataset_batch(tmp_path, config, [PRIMES]), verl_client(config, []))
    with pytest.raises(PluginError, match="no LLM server client with a load balancer"):
        rollout(config, dataset_batch(tmp_path, config, [PRIMES]), None)
    # verl's router names a server nothing answers on: Polar refuses it, and the run stops there.
    monkeypatch.setenv("POLAR_ENGINE_WAIT_S", "0")
    with pytest.raises(PluginError, match=r"did not take the trainer's engines \['http://127.0.0.1:9'\].*not reachable"):
        rollout(config, dataset_batch(tmp_path, config, [PRIMES]), verl_client(config, ["127.0.0.1:9"]))
    # A task sampling at another temperature than verl's actor assumes.
    hot = {**PRIMES, "task_id": "hot", "agent": {**PRIMES["agent"], "sampling": {"temperature": 0.5}}}
    monkeypatch.setenv("POLAR_TASKS", str(tmp_path / "hot.jsonl"))
    (tmp_path / "hot.jsonl").write_text(json.dumps(PRIMES) + "\n" + json.dumps(hot) + "\n")
    with pytest.raises(PluginError, match=r"agent.sampling.temperature=0.5 differs from the trainer's 1.0"):
        rollout(config, dataset_batch(tmp_path, config, [hot]), client)
    # No control API configured.
    monkeypatch.delenv("POLAR_CONTROL_URL")
    with pytest.raises(PluginError, match="POLAR_CONTROL_URL and POLAR_CONTROL_TOKEN"):
        rollout(config, dataset_batch(tmp_path, config, [PRIMES]), client)


class InProcessAgentLoops:
    """verl's AgentLoopManagerTQ.generate_sequences without its ray.remote hop: the real
    AgentLoopWorkerTQ class, constructed here, spawns its background sessions; this waits for them."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def generate_sequences(self, batch: Any) -> None:
        async def run() -> None:
            await self.worker.generate_sequences(batch)
            while self.worker.background_tasks:
                await asyncio.gather(*list(self.worker.background_tasks))

        asyncio.run(run())


def v1_trainer(config: Any, tmp_path: Path, worker: Any, step: int) -> Any:
    """verl's v1 PPOTrainerSync, not constructed (that starts its workers and engines on GPUs), with
    the state its data-path methods read: its config, its dataloader over verl's RLHFDataset, the
    agent-loop manager, the step."""
    from torch.utils.data import DataLoader
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
    from verl.utils import hf_tokenizer

    path = tmp_path / "train.parquet"
    import pandas as pd

    pd.DataFrame(
        [
            {
                "prompt": [{"role": "user", "content": PRIMES["instruction"]}],
                "data_source": "polar",
                "reward_model": {"style": "rule", "ground_truth": ""},
                "extra_info": {"index": 0, "polar_task_id": "primes-split"},
            }
        ]
    ).to_parquet(path)
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=hf_tokenizer(config.actor_rollout_ref.model.path), config=config.data)
    trainer = object.__new__(PPOTrainerSync)  # trainer_mode: sync
    trainer.__dict__.update(
        config=config,
        trainer_mode="sync",
        global_steps=step,
        train_dataloader=DataLoader(dataset, batch_size=1, collate_fn=collate_fn),
        train_dataloader_it=None,
        agent_loop_manager=InProcessAgentLoops(worker),
        use_critic=False,
        _rollout_moe_lb_metrics_accumulator=None,
        _get_n_gpus_for_throughput=lambda: 1,
    )
    return trainer


def test_verls_v1_trainer_reads_the_plugins_rows_back_through_transfer_queue(
    local_ray: None, engine: str, serve: dict[str, Any], polar_env: Path, model_dir: Path, tmp_path: Path
) -> None:
    """trainer.use_v1 (verl's default), trainer_mode sync, on verl's real TransferQueue: the
    trainer's ``_next_train_batch`` and ``_submit_batch_to_rollout`` (prompt tags in TQ), the real
    ``AgentLoopWorkerTQ`` (n sessions per uid, each session's traces under ``{uid}_{session}_{i}``,
    status tags), the ``ReplayBuffer`` sampling the finished group, the trainer's
    ``_compute_advantage`` (rows read from TQ, ``compute_advantage_for_multi_trajectories`` with
    ``grpo``, advantages written back) and ``_compute_metrics`` (the staleness metrics from the
    ``min_global_steps`` / ``max_global_steps`` tags). The step is Polar's policy version."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    step = 3  # rows of step 3 are sampled by the weights verl synced after step 2
    control = ControlClient(serve["proxy_url"], serve["token"])
    # bypass mode: old_log_probs are the engine's (verl's actor, which would recompute them, needs GPUs)
    config = verl_config(
        model_dir, "trainer.use_v1=true", "data.train_batch_size=1", "algorithm.adv_estimator=grpo", "algorithm.rollout_correction.bypass_mode=true"
    )
    worker = AgentLoopWorkerTQ.__ray_actor_class__(config, verl_client(config, [host_port(engine)]))
    trainer = v1_trainer(config, tmp_path, worker, step)
    asked = engine_requests(engine)
    trainer._submit_batch_to_rollout(trainer._next_train_batch())
    assert [r["url"] for r in control.replicas()] == [engine] and engine_requests(engine) > asked
    assert control.policy_version() == {"version": str(step - 1), "set_by": "trainer"}

    buffer = ReplayBuffer(
        trainer_mode="sync",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.1,
    )
    batch, _ = buffer.sample(global_steps=step, partition_id="train", batch_size=1)
    assert len(batch.keys) == N * 2  # 3 sessions x 2 traces, every one of the plug-in's rows
    assert {k.rsplit("_", 1)[0].split("_", 1)[1] for k in batch.keys} == {str(s) for s in range(N)}
    assert {(t["min_global_steps"], t["max_global_steps"]) for t in batch.tags} == {(step - 1, step - 1)}

    metrics: dict[str, Any] = {}
    batch = trainer._compute_old_log_prob(batch, metrics)
    batch = trainer._compute_advantage(batch, metrics)
    rows = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["advantages", "response_mask", "rm_scores", "extra_fields"])
    got = [a[m == 1].unique().item() for a, m in zip(rows["advantages"], rows["response_mask"])]
    rewards = np.array([float(r.sum()) for r in rows["rm_scores"]])
    sessions = [k.rsplit("_", 1)[0] for k in batch.keys]
    want = session_grpo_advantages([k.split("_", 1)[0] for k in batch.keys], sessions, rewards)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert max(abs(want)) > 0.5
    # verl's own grpo over the rows (each trace a row) would count every session twice: not the same.
    per_row = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=torch.nn.utils.rnn.pad_sequence(list(rows["rm_scores"]), batch_first=True),
        response_mask=torch.nn.utils.rnn.pad_sequence(list(rows["response_mask"]), batch_first=True),
        index=np.array([k.split("_", 1)[0] for k in batch.keys], dtype=object),
    )[0]
    assert not np.allclose([a[a != 0][:1].sum().item() for a in per_row], want, atol=0.05)
    # Every capture names the step: the shard's traces carry the version the plug-in stamped.
    task_id = rows["extra_fields"][0]["polar_task_id"]
    assert {t.policy_version for t in control.shard(task_id)} == {str(step - 1)}

    trainer._compute_metrics(batch, metrics, {"step": 1.0, "gen": 1.0}, global_steps=step, epoch=0)
    assert metrics["training/off_policy/trajectory_staleness/max"] == 0
    assert metrics["training/off_policy/trajectory_spans/max"] == 1


def test_v1_refuses_polar_grpo_naming_grpo(local_ray: None, engine: str, polar_env: Path, model_dir: Path, tmp_path: Path) -> None:
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    config = verl_config(model_dir, "trainer.use_v1=true", "algorithm.adv_estimator=polar_grpo")
    worker = AgentLoopWorkerTQ.__ray_actor_class__(config, verl_client(config, [host_port(engine)]))
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}
    with pytest.raises(PluginError, match="algorithm.adv_estimator=grpo"):
        asyncio.run(worker._run_agent_loop({}, trajectory, agent_name="polar", session_id=0, uid="u", global_steps=1))


def test_a_session_over_verls_response_budget_is_cut_as_verl_cuts_its_own_and_marked() -> None:
    """rollout.response_length is per session in verl: the proxy caps each call at it, and a
    trace whose turns add up to more is cut (response_ids[:response_length], mask and logprobs
    with it) and marked, never refused (one long session must not stop the run)."""
    from support.trainer_shard import shard_traces

    trace = max((t for t in shard_traces() if t.reward is not None and t.response_logprobs is not None), key=lambda t: len(t.response_ids))
    budget = len(trace.response_ids) - 5
    out = plugin._output(trace, prompt_length=10_000, response_length=budget, raw_logprobs="warn", elapsed=0.0)
    assert out.response_ids == trace.response_ids[:budget].tolist()
    assert out.response_mask == trace.loss_mask[:budget].astype(int).tolist()
    assert len(out.response_logprobs) == budget
    assert out.extra_fields["polar_cut"] == "response_length"
    assert out.extra_fields["polar_response_tokens"] == len(trace.response_ids)
    whole = plugin._output(trace, prompt_length=10_000, response_length=len(trace.response_ids), raw_logprobs="warn", elapsed=0.0)
    assert whole.extra_fields["polar_cut"] is None and whole.response_ids == trace.response_ids.tolist()

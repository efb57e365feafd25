"""TRL 1.16's own GRPOTrainer.train() with the shipped rollout_func, on the real vLLM lane.

One engine for the module (scripts/engine.sh, the tiny untied Qwen3, float32) behind `polar serve`.
Three optimizer steps: before each generation after a step, TRL's own sync hook pushes the weights
through polar_rollouts.weight_sync; the proxy reads the version the engine reports into every
capture; TRL's own importance-sampling path compares its logprobs with the engine's. One of the
two tasks splits every session into two traces. Skipped (with the reason) where the engine lane
is not set up, except under CI or POLAR_REQUIRE_ENGINE=1.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import trainer_module
from support.engine_lane import needs_engine_lane
from support.engine_stack import Stack, engine_stack, lowercase_task

from polar_rollouts import ControlClient
from polar_rollouts.plugins.trl import polar_reward, polar_rollout_func
from polar_rollouts.weight_sync import VllmWeightSync

pytestmark = needs_engine_lane
STEPS = 3
GROUP = 2
MAX_TOKENS = 8
TOLERANCE = 1e-3  # nats; float32 engine and trainer agree to ~1e-6
SPLIT = "Describe the sea using lowercase letters only."


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with engine_stack(tmp_path_factory.mktemp("trl-engine"), seed=1) as s:
        yield s


def write_tasks(path: Path) -> list[str]:
    prompts = ["Write a few words in lowercase letters only.", SPLIT]
    tasks = [
        lowercase_task("lower", prompts[0], MAX_TOKENS, split=False),
        lowercase_task("lower-split", prompts[1], MAX_TOKENS, split=True),
    ]
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return prompts


def check_trl_agrees_with_engine(trainer: Any, steps: int) -> None:
    """TRL's own importance-sampling path: its logprobs (before each step) against the engine's."""
    logs = [e for e in trainer.state.log_history if "sampling/sampling_logp_difference/max" in e]
    assert len(logs) == steps
    for entry in logs:
        assert entry["sampling/sampling_logp_difference/max"] < TOLERANCE, entry
        assert abs(entry["sampling/importance_sampling_ratio/mean"] - 1) < TOLERANCE, entry


def grpo_trainer(stack: Stack, out: Path, rollout_func: Any, prompts: list[str], steps: int) -> Any:
    import datasets
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    model = Qwen3ForCausalLM.from_pretrained(str(stack.model_dir), dtype=torch.float32, attn_implementation="eager")
    args = GRPOConfig(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        report_to=[],
        per_device_train_batch_size=GROUP * len(prompts),
        num_generations=GROUP,
        max_steps=steps,
        learning_rate=5e-2,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    return GRPOTrainer(
        model=model,
        reward_funcs=polar_reward,
        args=args,
        train_dataset=datasets.Dataset.from_list([{"prompt": p} for p in prompts] * steps),
        processing_class=AutoTokenizer.from_pretrained(str(stack.model_dir)),
        rollout_func=rollout_func,
    )


def test_grpo_trainer_three_steps_on_the_real_engine(stack: Stack, tmp_path: Path) -> None:
    trainer_module("trl", "pip install 'polar-rollouts[trl]'")
    prompts = write_tasks(tmp_path / "tasks.jsonl")
    rollout = polar_rollout_func(
        stack.proxy_url, stack.token, tasks=tmp_path / "tasks.jsonl",
        engine_url=stack.engine_url, model_dir=stack.model_dir, timeout_s=240,
    )  # fmt: skip
    batches: list[dict[str, Any]] = []
    trainer = grpo_trainer(stack, tmp_path / "out", lambda p, t: batches.append(rollout(p, t)) or batches[-1], prompts, STEPS)
    before = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    result = trainer.train()
    assert result.global_step == STEPS

    check_trl_agrees_with_engine(trainer, STEPS)

    # Weights pushed before every generation, named by TRL's step; the engine reports each one.
    assert [s.version for s in rollout.syncs] == [str(k) for k in range(STEPS)]
    assert [s.reported for s in rollout.syncs] == [{stack.engine_url: str(k)} for k in range(STEPS)]
    assert any(not (before[k] == v).all() for k, v in trainer.model.state_dict().items())

    assert len(batches) == STEPS
    for step, batch in enumerate(batches):
        n = len(batch["prompt_ids"])
        assert n == GROUP * len(prompts) and all(len(v) == n for v in batch.values())
        # Every session was sampled by the weights of this step, as the engine said at the call.
        assert batch["polar_policy_version"] == [str(step)] * n
        assert all(r is not None for r in batch["polar_reward"])
        for row in range(n):
            split = batch["polar_task_id"][row].startswith("lower-split.")
            assert batch["polar_traces"][row] == (2 if split else 1), (step, row)
            assert sum(batch["env_mask"][row]) > 0

    captures = [json.loads(gzip.decompress(p.read_bytes())) for p in (stack.store / "captures").rglob("*.json.gz")]
    ours = [c for c in captures if rollout.run_id in c.get("task_id", "")]
    assert len(ours) == STEPS * len(prompts) * GROUP * 2  # two calls a session
    # vLLM's /weight_info, read by the proxy; when that read missed (it waits behind a reload on the
    # engine), the step the trainer named through the control API, with the reason on the capture
    # (docs/engines.md "Versions under load"). The rows' versions above are checked either way.
    for c in ours:
        assert c["policy_version_source"] == "engine" or (
            c["policy_version_source"] == "trainer" and c.get("policy_version_note")
        ), c


def test_the_weight_sync_reaches_the_engine(stack: Stack) -> None:
    """Standalone helper on the same engine: a push of other weights changes what the engine
    samples, and the version it reports follows; a push of the originals restores both."""
    import torch
    from safetensors.torch import load_file

    sync = VllmWeightSync(stack.engine_url, stack.model_dir)
    assert sync.version_source == "engine"
    original = load_file(str(stack.model_dir / "model.safetensors"))

    def greedy() -> list[int]:
        body = {"model": "policy", "prompt": "hello there", "max_tokens": 6, "temperature": 0, "return_token_ids": True}
        return list(sync._http("POST", f"{stack.engine_url}/v1/completions", body)["choices"][0]["token_ids"])

    first = greedy()
    zeroed = {k: (torch.zeros_like(v) if k == "lm_head.weight" else v) for k, v in original.items()}
    report = sync.push(zeroed, "sync-test-1")
    assert report.reported == {stack.engine_url: "sync-test-1"}
    assert greedy() == [0] * 6  # all-zero logits: greedy picks id 0
    sync.push(original, "sync-test-2")
    assert greedy() == first
    assert sync._http("GET", f"{stack.engine_url}/weight_info")["weight_version"] == "sync-test-2"
    assert sync._http("GET", f"{stack.engine_url}/is_paused")["is_paused"] is False


def test_a_version_through_the_control_api(stack: Stack) -> None:
    """The branch for engines without /weight_info, with the real client and control API."""
    from safetensors.torch import load_file

    client = ControlClient(stack.proxy_url, stack.token)
    sync = VllmWeightSync(stack.engine_url, stack.model_dir, control=client, version_source="control")
    report = sync.push(load_file(str(stack.model_dir / "model.safetensors")), 1000)
    assert report.reported == {stack.engine_url: None}
    assert client.policy_version() == {"version": "1000", "set_by": "trainer"}

"""polar_rollouts.plugins.slime_rollout inside slime's own code (the clone $POLAR_SLIME_CHECKOUT
names at 624b824a; skipped with the reason otherwise), against its own `polar serve` (which starts
routing to its dry-run policy) and a second dry-run policy standing for slime's SGLang router
(``args.sglang_router_ip`` / ``sglang_router_port``): the generate function through slime's
``generate_and_rm_group``, the rollout function through slime's ``call_rollout_fn`` (training and
evaluation, the latter through slime's own ``eval_rollout`` on an eval data set slime's
``Dataset`` reads), then slime's ``validate_rollout_id_annotated``, the flattening of
``RolloutManager._get_rollout_data`` and ``_convert_samples_to_train_data`` with
``--custom-reward-post-process-path polar_rollouts.adapters.slime.post_process_rewards``.

first-primes: sample i follows the dry-run script's alternative i (rewards 1, 2/3, 0), so one
Polar task per slime group gives advantages 0.873, 0.218, -1.091; samples run as their own
1-sample tasks would all get reward 1 and advantage 0. primes-split (per_request builder) splits
every session into two traces: each session is then two Samples sharing one rollout_id, counted
once in the group's statistics and once in slime's loss.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import urllib.request
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import ROOT, polar_policy, polar_serve_at
from support.checkouts import SLIME_STUBS, checkout, stubbed

from polar_rollouts.client import ControlClient
from polar_rollouts.groups import session_grpo_advantages
from polar_rollouts.plugins import slime_rollout as plugin
from polar_rollouts.plugins.task_group import PluginError

checkout("POLAR_SLIME_CHECKOUT")
with stubbed(*SLIME_STUBS, megatron__core__mpu={"get_context_parallel_world_size": lambda: 1}):
    from slime.backends.megatron_utils.cp_utils import get_sum_of_sample_mean
    from slime.observability.rollout_data_utils import validate_rollout_id_annotated
    from slime.ray.rollout import RolloutManager as RolloutActor
    from slime.rollout.base_types import call_rollout_fn
    from slime.rollout.sglang_rollout import generate_and_rm_group
    from slime.rollout import sample_hooks
    from slime.utils.eval_config import build_eval_dataset_configs
    from slime.utils.misc import load_function
    from slime.utils.types import Sample

N = 3
PRIMES = json.loads(
    next(line for line in (ROOT / "examples" / "grpo-tasks.jsonl").read_text().splitlines() if '"first-primes"' in line)
)
SPLIT = {**PRIMES, "task_id": "primes-split", "builder": {"strategy": "per_request"}}
HOOK = "polar_rollouts.adapters.slime.post_process_rewards"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.qwen3 import TOKENIZER_JSON
    from transformers import PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tokenizer")
    PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_JSON), pad_token="<|endoftext|>", eos_token="<|im_end|>").save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    """slime's SGLang router (a dry-run policy of its own: what it was asked is readable)."""
    with polar_policy() as url:
        yield url


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A `polar serve` of this module's own: the plug-in replaces its replicas."""
    with polar_serve_at(tmp_path_factory.mktemp("slime-serve")) as info:
        yield info


@pytest.fixture()
def polar_env(serve: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in (PRIMES, SPLIT)) + "\n")
    monkeypatch.setenv("POLAR_CONTROL_URL", serve["proxy_url"])
    monkeypatch.setenv("POLAR_CONTROL_TOKEN", serve["token"])
    monkeypatch.setenv("POLAR_TASKS", str(path))


def engine_requests(url: str) -> int:
    """The chat completions the engine answered so far."""
    with urllib.request.urlopen(f"{url}/debug/requests", timeout=10) as answer:
        return int(json.load(answer)["chat_completions"])


def slime_args(model_dir: Path, router: str = "127.0.0.1:9", **over: Any) -> Namespace:
    """The arguments slime's code reads on these paths (slime/utils/arguments.py defaults)."""
    host, port = router.removeprefix("http://").rsplit(":", 1)
    base = dict(
        sglang_router_ip=host,
        sglang_router_port=int(port),
        hf_checkpoint=str(model_dir),
        sglang_server_concurrency=64,
        rollout_num_engines=1,
        sglang_dp_size=None,
        rollout_temperature=1.0,
        rollout_top_p=1.0,
        rollout_top_k=-1,
        rollout_max_response_len=256,
        rollout_stop=None,
        rollout_stop_token_ids=None,
        rollout_skip_special_tokens=False,
        partial_rollout=False,
        group_rm=False,
        custom_rm_path=None,
        rollout_sample_hook_path=None,
        custom_generate_function_path="polar_rollouts.plugins.slime_rollout.generate",
        n_samples_per_prompt=N,
        n_samples_per_eval_prompt=1,
        rollout_batch_size=2,
        advantage_estimator="grpo",
        rewards_normalization=True,
        grpo_std_normalization=True,
        reward_key=None,
        custom_reward_post_process_path=HOOK,
    )
    return Namespace(**{**base, **over})


_numbers = itertools.count()


class DataSource:
    """slime's RolloutDataSource.get_samples, for prompts already in memory: n copies of each
    prompt Sample per group, group_index and index counting up across calls."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = tasks

    def get_samples(self, num: int) -> list[list[Any]]:
        groups = []
        for task in self.tasks[:num]:
            group_index = next(_numbers)
            groups.append(
                [
                    Sample(
                        group_index=group_index,
                        index=next(_numbers),
                        prompt=task["instruction"],
                        metadata={"polar_task_id": task["task_id"]},
                    )
                    for _ in range(N)
                ]
            )
        return groups


def train_data(args: Namespace, nested: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """RolloutManager._get_rollout_data's checks and flattening, then its conversion."""
    validate_rollout_id_annotated(nested)
    data = nested
    while isinstance(data[0], list):
        data = list(itertools.chain.from_iterable(data))
    manager = RolloutActor.__ray_actor_class__.__new__(RolloutActor.__ray_actor_class__)
    manager.args = args
    manager.custom_reward_post_process_func = load_function(args.custom_reward_post_process_path)
    manager.custom_convert_samples_to_train_data_func = None
    return data, manager._convert_samples_to_train_data(data)


def session(s: Any) -> str:
    return str(s.metadata["polar"]["session_id"])


def expected_advantages(samples: list[Any]) -> list[float]:
    """Polar's session rule over slime's groups, from the rewards the samples carry."""
    return session_grpo_advantages(
        [str(s.group_index) for s in samples], [session(s) for s in samples], np.array([s.reward for s in samples])
    ).tolist()


def check(samples: list[Any], data: dict[str, Any], groups: int, traces_per_session: int) -> None:
    assert len(samples) == groups * N * traces_per_session
    assert sorted(s.reward for s in samples) == pytest.approx(sorted([1.0, 2 / 3, 0.0] * groups * traces_per_session))
    want = expected_advantages(samples)
    assert max(abs(a) for a in want) > 0.5
    np.testing.assert_allclose(data["rewards"], want, rtol=1e-5)
    # Each session one rollout in slime's loss, whatever its number of traces.
    reducer = get_sum_of_sample_mean(
        [len(s.tokens) for s in samples],
        data["response_lengths"],
        [torch.tensor(m) for m in data["loss_masks"]],
        [torch.tensor(x) for x in data["rollout_mask_sums"]],
        False,
    )
    assert reducer(torch.ones(sum(data["response_lengths"]))).item() == pytest.approx(groups * N)
    assert len(set(data["rollout_ids"])) == groups * N


@pytest.mark.parametrize(("task", "traces"), [(PRIMES, 1), (SPLIT, 2)], ids=["one-trace", "split-sessions"])
def test_generate_function_through_slimes_generate_and_rm_group(
    polar_env: None, engine: str, serve: dict[str, Any], model_dir: Path, task: dict[str, Any], traces: int
) -> None:
    args = slime_args(model_dir, engine)
    groups = DataSource([task, task]).get_samples(2)
    asked = engine_requests(engine)
    sample_hooks.set_current_rollout_id(4)  # what slime's RolloutManager.generate does first

    async def rollout() -> list[Any]:
        return list(await asyncio.gather(*(generate_and_rm_group(args, g, {"temperature": 1.0}) for g in groups)))

    nested = asyncio.run(rollout())
    assert all(len(g) == N for g in nested)  # what slime's generate_rollout_async asserts
    samples, data = train_data(args, nested)
    # slime's group is Polar's: one task per group_index.
    for g in groups:
        mine = [s for s in samples if s.group_index == g[0].group_index]
        assert len({s.metadata["polar"]["task_id"] for s in mine}) == 1 and len({session(s) for s in mine}) == N
    check(samples, data, groups=2, traces_per_session=traces)
    # Polar routed to slime's router only, the calls reached it, and the rollout id is the version.
    control = ControlClient(serve["proxy_url"], serve["token"])
    assert [r["url"] for r in control.replicas()] == [engine] and engine_requests(engine) > asked
    assert {s.weight_versions[0] for s in samples} == {"4"}


def test_rollout_function_through_slimes_call_rollout_fn(
    polar_env: None, engine: str, serve: dict[str, Any], model_dir: Path, tmp_path: Path
) -> None:
    args = slime_args(model_dir, engine, custom_generate_function_path=None)
    control = ControlClient(serve["proxy_url"], serve["token"])
    asked = engine_requests(engine)
    out = call_rollout_fn(plugin.generate_rollout, args, 7, DataSource([PRIMES, SPLIT]), evaluation=False)
    assert [r["url"] for r in control.replicas()] == [engine] and engine_requests(engine) > asked
    samples, data = train_data(args, out.samples)
    one = [s for s in samples if len([x for x in samples if session(x) == session(s)]) == 1]
    two = [s for s in samples if s not in one]
    assert len(one) == N and len(two) == 2 * N
    np.testing.assert_allclose(data["rewards"], expected_advantages(samples), rtol=1e-5)
    assert max(abs(a) for a in data["rewards"]) > 0.5
    assert len(set(data["rollout_ids"])) == 2 * N
    assert {s.weight_versions[0] for s in samples} == {"7"}
    assert ControlClient(serve["proxy_url"], serve["token"]).policy_version() == {"version": "7", "set_by": "trainer"}

    # Evaluation: slime's default --eval-function-path is the rollout function; it runs slime's
    # own eval_rollout over its eval data set (slime's Dataset reading the file, its metadata
    # column naming the task), each prompt's n_samples_per_eval_prompt copies one Polar task.
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(json.dumps({"text": PRIMES["instruction"], "label": "", "metadata": {"polar_task_id": "first-primes"}}) + "\n" for _ in range(2)))
    eval_args = slime_args(
        model_dir, engine, custom_generate_function_path=None, n_samples_per_eval_prompt=N, eval_max_prompt_len=4096,
        input_key="text", label_key="label", metadata_key="metadata", multimodal_keys=None, tool_key=None,
        apply_chat_template=False, apply_chat_template_kwargs=None, eval_input_key=None, eval_label_key=None,
        eval_tool_key=None, eval_temperature=1.0, eval_top_p=1.0, eval_top_k=-1, eval_max_response_len=256,
        eval_min_new_tokens=None, eval_reward_key=None, rollout_seed=0, sglang_enable_deterministic_inference=False,
    )
    eval_args.eval_datasets = build_eval_dataset_configs(eval_args, [{"name": "polar-eval", "path": str(path)}], {})
    sample_hooks.set_current_rollout_id(8)
    result = call_rollout_fn(plugin.generate_rollout, eval_args, 8, DataSource([]), evaluation=True)
    evaluated = result.data["polar-eval"]
    assert sorted(evaluated["rewards"]) == pytest.approx(sorted([1.0, 2 / 3, 0.0] * 2))  # one task per prompt
    assert len({s.metadata["polar"]["task_id"] for s in evaluated["samples"]}) == 2


def test_refusals_name_the_fix(
    polar_env: None, engine: str, serve: dict[str, Any], model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = slime_args(model_dir, engine, custom_generate_function_path=None)
    with pytest.raises(PluginError, match="'nope' is not a task_id of"):
        call_rollout_fn(plugin.generate_rollout, args, 9, DataSource([{**PRIMES, "task_id": "nope"}]), evaluation=False)
    # Someone else pointed Polar at another engine mid-run: the next rollout stops, naming both.
    control = ControlClient(serve["proxy_url"], serve["token"])
    with polar_policy() as other:
        control.replace_replicas([other])
        with pytest.raises(PluginError, match=r"routes to \['http://127.0.0.1:\d+'\], not the trainer's engines"):
            call_rollout_fn(plugin.generate_rollout, args, 12, DataSource([PRIMES]), evaluation=False)
        control.replace_replicas([engine])
    # A router nothing answers on: Polar refuses it, and the rollout stops before any task.
    monkeypatch.setenv("POLAR_ENGINE_WAIT_S", "0")
    with pytest.raises(PluginError, match=r"did not take the trainer's engines \['http://127.0.0.1:9'\].*not reachable"):
        call_rollout_fn(plugin.generate_rollout, slime_args(model_dir, "127.0.0.1:9"), 11, DataSource([PRIMES]), evaluation=False)
    monkeypatch.delenv("POLAR_CONTROL_URL")
    with pytest.raises(PluginError, match="POLAR_CONTROL_URL and POLAR_CONTROL_TOKEN"):
        call_rollout_fn(plugin.generate_rollout, args, 10, DataSource([PRIMES]), evaluation=False)

"""polar_rollouts.plugins.trl: TRL's rollout_func and reward function, checked inside TRL 1.16's
own GRPOTrainer.train() against `polar serve` with the dry-run policy (the real-engine proof, with
weight sync and logprob agreement, is test_trl_plugin_engine.py), plus the row rules on the
checked-in trainer shard and every refusal."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, trainer_module

from polar_rollouts.plugins import trl as plugin
from polar_rollouts.plugins.trl import PolarRolloutError, polar_reward, polar_rollout_func, session_row

datasets = trainer_module("datasets", "pip install 'polar-rollouts[trl]'")
trainer_module("trl", "pip install 'polar-rollouts[trl]'")

GROUP = 3
PRIMES = json.loads(
    next(line for line in (ROOT / "examples" / "grpo-tasks.jsonl").read_text().splitlines() if '"first-primes"' in line)
)


def tasks_file(tmp_path: Path) -> tuple[Path, list[str]]:
    """first-primes (sample i follows alternative i mod 3: rewards 1, 2/3, 0) and the same script
    under the per_request builder, so each of its sessions is two traces (a model call each)."""
    split = {
        **PRIMES,
        "task_id": "primes-split",
        "instruction": "Split into one trace per call.\n\n" + PRIMES["instruction"],
        "builder": {"strategy": "per_request"},
    }
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in (PRIMES, split)) + "\n")
    return path, [PRIMES["instruction"], split["instruction"]]


def make_trainer(tmp_path: Path, rollout_func: Any, prompts: list[str], steps: int) -> Any:
    from support.qwen3 import TOKENIZER_JSON, tiny_qwen3
    from transformers import PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON), pad_token="<|endoftext|>", eos_token="<|im_end|>"
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        report_to=[],
        per_device_train_batch_size=GROUP * len(prompts),
        num_generations=GROUP,
        max_steps=steps,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        learning_rate=1e-3,
        seed=0,
    )
    return GRPOTrainer(
        model=tiny_qwen3(seed=5),
        reward_funcs=polar_reward,
        args=args,
        train_dataset=datasets.Dataset.from_list([{"prompt": p} for p in prompts] * steps),
        processing_class=tokenizer,
        rollout_func=rollout_func,
    )


def test_grpo_trainer_trains_on_polar_groups(polar_serve: dict[str, Any], tmp_path: Path) -> None:
    path, prompts = tasks_file(tmp_path)
    rollout = polar_rollout_func(
        polar_serve["proxy_url"], polar_serve["token"], tasks=path, sync_weights=False, timeout_s=180
    )
    seen: list[dict[str, Any]] = []
    # One step: TRL's logprob pass over Qwen3's 151,669-id vocabulary is what costs on CPU.
    trainer = make_trainer(tmp_path, lambda p, t: seen.append(rollout(p, t)) or seen[-1], prompts, 1)
    result = trainer.train()
    assert result.global_step == 1 and np.isfinite(result.training_loss)

    assert len(rollout.task_ids) == 2  # two prompt groups a step, one Polar task group each
    for out in seen:
        n = len(out["prompt_ids"])
        assert n == 2 * GROUP and all(len(v) == n for v in out.values())
        for ids, lps, mask in zip(out["completion_ids"], out["logprobs"], out["env_mask"]):
            assert len(ids) == len(lps) == len(mask)
        # Rows are sessions in sample order; the dry-run policy's alternatives make the rewards.
        sessions = out["polar_session_id"]
        for g in range(2):
            assert sessions[g * GROUP : (g + 1) * GROUP] == [f"{out['polar_task_id'][g * GROUP]}-{i}" for i in range(GROUP)]
            assert out["polar_reward"][g * GROUP : (g + 1) * GROUP] == pytest.approx([1.0, 2 / 3, 0.0])
        # The per_request task: two traces a session, joined into one row (the second prompt
        # extends the first call), the inserted context masked. TRL's sampler orders the groups.
        for g in range(2):
            traces = out["polar_traces"][g * GROUP : (g + 1) * GROUP]
            split = out["polar_task_id"][g * GROUP].startswith("primes-split.")
            assert traces == ([2] * GROUP if split else [1] * GROUP)
        assert out["polar_untrained_tokens"] == [0] * (2 * GROUP)
    # TRL's own log: Polar's reward reached it through polar_reward, and its importance-sampling
    # path ran on the sampler's logprobs: the dry-run policy's are not the model's, so TRL's
    # correction (sequence_mask by default) masks every sequence out.
    logs = [entry for entry in trainer.state.log_history if "rewards/polar_reward/mean" in entry]
    assert len(logs) == 1
    assert logs[0]["rewards/polar_reward/mean"] == pytest.approx(5 / 9)
    assert logs[0]["sampling/sampling_logp_difference/mean"] > 1
    assert logs[0]["sampling/importance_sampling_ratio/max"] == 0


def test_key_mapping_broken_on_purpose_fails_trls_loop(
    polar_serve: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a plug-in that hands TRL every trace as a row (the mapping the
    issue's hand glue had) breaks TRL's group shapes inside TRL's own train()."""
    path, prompts = tasks_file(tmp_path)
    original = plugin.group_rows

    def per_trace_rows(traces: Any, num_samples: int, task_id: str, end_id: int, **kw: Any) -> list[dict[str, Any]]:
        rows = []
        for t in traces:
            row = session_row([t], raw_logprobs=kw["raw_logprobs"])
            assert row is not None
            rows.append(row)
        return rows if len(rows) != num_samples else original(traces, num_samples, task_id, end_id, **kw)

    monkeypatch.setattr(plugin, "group_rows", per_trace_rows)
    rollout = polar_rollout_func(polar_serve["proxy_url"], polar_serve["token"], tasks=path, sync_weights=False)
    trainer = make_trainer(tmp_path, rollout, prompts, 1)
    # 9 rows for TRL's 6 inputs: TRL hands its reward functions the first 6 extra values only
    # (a reward function without polar_reward's check returns 9, which TRL's own step refuses).
    with pytest.raises(PolarRolloutError, match="6 rewards for 9 completions"):
        trainer.train()


# -- rows ---------------------------------------------------------------------------------------


def split_sessions() -> dict[str, list[Any]]:
    from support.trainer_shard import shard_traces

    by: dict[str, list[Any]] = {}
    for t in shard_traces():
        if t.task_id == "split":
            by.setdefault(t.session_id, []).append(t)
    return by


def test_a_split_session_whose_second_prompt_extends_the_first_is_one_exact_row() -> None:
    first, second = sorted(split_sessions()["split-0"], key=lambda t: t.trace_index)
    row = session_row([second, first], raw_logprobs="warn")
    assert row is not None
    full = list(first.prompt_ids) + list(first.response_ids)
    tail = len(second.prompt_ids) - len(full)
    assert row["prompt_ids"] == first.prompt_ids.tolist()
    assert row["prompt_ids"] + row["completion_ids"] == second.prompt_ids.tolist() + second.response_ids.tolist()
    assert row["env_mask"] == first.loss_mask.tolist() + [0] * tail + second.loss_mask.tolist()
    assert row["logprobs"] == pytest.approx(
        first.response_logprobs.tolist() + [0.0] * tail + second.response_logprobs.tolist()
    )
    assert row["polar_traces"] == 2 and row["polar_untrained_tokens"] == 0 and row["polar_reward"] == 1.0


def test_at_a_real_chain_break_the_row_restarts_from_the_later_trace() -> None:
    first, second = sorted(split_sessions()["split-1"], key=lambda t: t.trace_index)
    changed = second.prompt_ids.copy()
    changed[len(first.prompt_ids) + 2] += 1  # the history re-templated: not what the engine sampled
    broken = dataclasses.replace(second, prompt_ids=changed)
    row = session_row([first, broken], raw_logprobs="warn")
    assert row is not None
    # Every mask-1 token sits in exactly the context the engine saw when sampling it.
    assert row["prompt_ids"] == changed.tolist() and row["completion_ids"] == second.response_ids.tolist()
    assert row["env_mask"] == second.loss_mask.tolist()
    assert row["polar_untrained_tokens"] == int(first.loss_mask.sum()) > 0


def test_a_failed_session_keeps_the_group_whole_and_is_unscorable() -> None:
    by = split_sessions()
    traces = [t for s in ("split-0", "split-2") for t in by[s]]  # split-1 left no trace
    rows = plugin.group_rows(traces, 3, "split", 151645, raw_logprobs="warn")
    assert [r["polar_session_id"] for r in rows] == ["split-0", "split-1", "split-2"]
    assert rows[1]["completion_ids"] == [151645] and rows[1]["env_mask"] == [0] and rows[1]["polar_reward"] is None
    assert rows[1]["prompt_ids"] == rows[0]["prompt_ids"]
    assert polar_reward(completions=[None] * 3, polar_reward=[r["polar_reward"] for r in rows]) == [1.0, None, 0.0]
    with pytest.raises(PolarRolloutError, match="pass its arguments by keyword"):
        polar_reward(["p"] * 3, polar_reward=[r["polar_reward"] for r in rows])
    with pytest.raises(PolarRolloutError, match="none of its 3 sessions"):
        plugin.group_rows([], 3, "split", 151645, raw_logprobs="warn")


# -- refusals -----------------------------------------------------------------------------------


def test_refusals_name_what_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLAR_CONTROL_TOKEN", raising=False)
    monkeypatch.delenv("POLAR_CONTROL_URL", raising=False)
    path, _ = tasks_file(tmp_path)
    with pytest.raises(PolarRolloutError, match="control_url is required"):
        polar_rollout_func(tasks=path, sync_weights=False)
    with pytest.raises(PolarRolloutError, match="control_token is required"):
        polar_rollout_func("http://127.0.0.1:9", tasks=path, sync_weights=False)
    with pytest.raises(PolarRolloutError, match="engine_url= and model_dir="):
        polar_rollout_func("http://127.0.0.1:9", "t", tasks=path)
    with pytest.raises(PolarRolloutError, match="say which Polar task"):
        polar_rollout_func("http://127.0.0.1:9", "t", sync_weights=False)
    with pytest.raises(PolarRolloutError, match="not found"):
        polar_rollout_func("http://127.0.0.1:9", "t", tasks=tmp_path / "nope.jsonl", sync_weights=False)
    lookup = plugin.TaskLookup(path, None)
    with pytest.raises(PolarRolloutError, match="matches no task in .*tasks.jsonl"):
        lookup.task_for("Write a poem.")
    assert lookup.task_for([{"role": "user", "content": PRIMES["instruction"]}])["task_id"] == "first-primes"
    with pytest.raises(PolarRolloutError, match="polar_rollout_func"):
        polar_reward(completions=["a"])


def test_tasks_from_a_dataset_column(tmp_path: Path) -> None:
    rows = [{"prompt": "p0", "task": json.dumps({**PRIMES, "instruction": "p0"})}, {"prompt": "p1", "task": "say p1"}]
    lookup = plugin.TaskLookup("task", {"agent": {"harness": "shell"}})
    lookup.index_dataset([datasets.Dataset.from_list(rows)])
    assert lookup.task_for("p0")["evaluator"] == PRIMES["evaluator"]
    assert lookup.task_for("p1") == {"agent": {"harness": "shell"}, "instruction": "say p1"}
    with pytest.raises(PolarRolloutError, match="matches no task in dataset column 'task'"):
        lookup.task_for("p2")
    missing = plugin.TaskLookup("tsk", None)
    with pytest.raises(PolarRolloutError, match=r"neither a task file nor a column .*'prompt', 'task'"):
        missing.index_dataset([datasets.Dataset.from_list(rows)])


def test_a_task_sampling_at_another_temperature_than_trl_is_refused(tmp_path: Path) -> None:
    path, _ = tasks_file(tmp_path)
    rollout = polar_rollout_func("http://127.0.0.1:9", "t", tasks=path, sync_weights=False)
    hot = {**PRIMES, "agent": {**PRIMES["agent"], "sampling": {"temperature": 0.7}}}
    rollout.lookup.by_text = {PRIMES["instruction"]: hot}

    class Trainer:
        temperature = 1.0

    with pytest.raises(PolarRolloutError, match="GRPOConfig.temperature is 1.0"):
        rollout._task(PRIMES["instruction"], Trainer(), 3, 0, 0)

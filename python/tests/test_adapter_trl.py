"""TRL 1.16 / Hugging Face datasets: the adapter's output through TRL's own collator, SFTTrainer
and GRPOTrainer loss.

GRPO numbers (support/trainer_shard.py, Polar's session rule): advantages 0.577, 0.577, -1.155 on
tools-0..2 and 1.155, 1.155, -0.577 x 4 on the split session traces.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import trainer_module
from support.trainer_shard import PAD, POLAR_ADVANTAGE, scored_traces, shard_traces, tool_output_positions

from polar_rollouts import iter_shards
from polar_rollouts.adapters.rewards import MissingRewardError
from polar_rollouts.adapters.trl import to_grpo_inputs, to_hf_dataset, to_hf_rows, to_sft_dataset

datasets = trainer_module("datasets", "pip install polar-rollouts[trl]")
trl_sft = trainer_module("trl.trainer.sft_trainer", "pip install polar-rollouts[trl]")


def test_sft_labels_through_trls_collator(polar_run_store: Path) -> None:
    traces = [t for _, ts in iter_shards(polar_run_store) for t in ts]
    ds = to_sft_dataset(traces)
    assert isinstance(ds, datasets.Dataset) and len(ds) == len(traces)
    collator = trl_sft.DataCollatorForLanguageModeling(pad_token_id=PAD)
    batch = collator([ds[i] for i in range(len(ds))])
    for i, t in enumerate(traces):
        n = len(t.input_ids)
        assert batch["input_ids"][i, :n].tolist() == t.input_ids.tolist()
        labels = batch["labels"][i]
        trained = (labels != -100).nonzero().flatten().numpy()
        # Exactly the sampled response tokens are trained on, at their own positions.
        expected = len(t.prompt_ids) + np.flatnonzero(t.loss_mask)
        np.testing.assert_array_equal(trained, expected)
        assert labels[trained].tolist() == t.input_ids[expected].tolist()
        assert batch["attention_mask"][i].sum().item() == n


def test_grpo_columns_carry_trls_names_and_polars_advantages() -> None:
    traces = scored_traces()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = to_hf_dataset(traces)
    assert ds.column_names[:5] == ["prompt_ids", "completion_ids", "tool_mask", "sampling_per_token_logps", "advantages"]
    np.testing.assert_allclose(ds["advantages"], [POLAR_ADVANTAGE[t.session_id] for t in traces], rtol=1e-5)
    assert ds[0]["tool_mask"] == traces[0].loss_mask.tolist()
    with pytest.raises(MissingRewardError, match="tools-3 trace 0"):
        to_hf_rows(shard_traces())
    # SFT needs no reward: an unscored row keeps None, never a made-up 0.
    sft = to_sft_dataset(shard_traces())
    assert [r for r, s in zip(sft["reward"], sft["session_id"]) if s == "tools-3"] == [None]
    first = sft[0]
    assert first["labels"] == [tok if m else -100 for tok, m in zip(first["input_ids"], first["completion_mask"])]


def test_one_sft_step_in_trls_trainer(polar_run_store: Path, tmp_path: Path) -> None:
    """TRL's SFTTrainer builds the labels from our completion_mask by its own rule and trains a step."""
    import torch
    from support.qwen3 import TOKENIZER_JSON, tiny_qwen3
    from transformers import PreTrainedTokenizerFast
    from trl import SFTConfig, SFTTrainer

    traces = [t for _, ts in iter_shards(polar_run_store) for t in ts if t.group_id == "hello-file"]
    ours = to_sft_dataset(traces)
    model = tiny_qwen3(seed=2)
    # The Qwen3 tokenizer the project ships, read from its file: nothing comes from a hub.
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON), pad_token="<|endoftext|>", eos_token="<|im_end|>"
    )
    args = SFTConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=len(traces),
        completion_only_loss=True,
        use_cpu=True,
        bf16=False,
        report_to=[],
        save_strategy="no",
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=ours.select_columns(["input_ids", "completion_mask"]),
        processing_class=tokenizer,
    )
    batch = next(iter(trainer.get_train_dataloader()))
    by_input = {tuple(row["input_ids"]): row["labels"] for row in ours}
    for ids, labels in zip(batch["input_ids"].tolist(), batch["labels"].tolist()):
        n = len(next(k for k in by_input if list(k) == ids[: len(k)]))
        assert labels[:n] == by_input[tuple(ids[:n])]
        assert all(x == -100 for x in labels[n:])
    before = [p.detach().clone() for p in model.parameters()]
    result = trainer.train()
    assert result.global_step == 1 and np.isfinite(result.training_loss)
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


def grpo_trainer(tmp_path: Path) -> tuple[Any, Any]:
    from support.qwen3 import TOKENIZER_JSON, tiny_qwen3
    from transformers import PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    model = tiny_qwen3(seed=3)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON), pad_token="<|endoftext|>", eos_token="<|im_end|>"
    )
    args = GRPOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=False,
        report_to=[],
        per_device_train_batch_size=2,
        num_generations=2,
        save_strategy="no",
        disable_tqdm=True,
    )
    # The dataset and reward function are never used: the batch comes from Polar, not generate().
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=args,
        train_dataset=datasets.Dataset.from_list([{"prompt": "unused"}] * 2),
        processing_class=tokenizer,
    )
    return trainer, model


def grpo_inputs(*, other_tool_output: bool = False) -> tuple[list[Any], dict[str, Any]]:
    """The fixture's batch. The dry-run policy samples every session of a task token for token, so
    with group-centred advantages the gradients of a group's traces cancel exactly; with
    ``other_tool_output`` tools-2's tool returned other bytes, so only what the model reads from
    tool output separates it from tools-0 and tools-1."""
    traces = scored_traces()
    if other_tool_output:
        t = traces[2]
        assert t.session_id == "tools-2"
        t.response_ids = t.response_ids.copy()
        t.response_ids[tool_output_positions(t)] = 1000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return traces, to_grpo_inputs(traces, pad_token_id=PAD)


def trl_logps(trainer: Any, model: Any, inputs: dict[str, Any]) -> Any:
    """Per-token logprobs of the completion as GRPOTrainer's loss computes them."""
    import torch

    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model,
            torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1),
            torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1),
            inputs["completion_ids"].size(1),
        )
    return logps


def test_trls_grpo_sees_tool_output_when_scoring_later_tokens(tmp_path: Path) -> None:
    """The model must attend to tool output: overwriting it moves the logprobs of every sampled
    token after it (and of none before it), as in TRL's own multi-turn rollout, where
    completion_mask is 1 on tool tokens and only tool_mask is 0."""
    trainer, model = grpo_trainer(tmp_path)
    traces, inputs = grpo_inputs()
    assert inputs["advantages"].tolist() == pytest.approx([POLAR_ADVANTAGE[t.session_id] for t in traces], rel=1e-5)
    i = 0  # tools-0: multi-turn, tool output between sampled turns
    tool = tool_output_positions(traces[i])
    rl = len(traces[i].response_ids)
    assert inputs["completion_mask"][i, :rl].eq(1).all()
    assert inputs["tool_mask"][i, :rl].tolist() == traces[i].loss_mask.tolist()
    before = trl_logps(trainer, model, inputs)
    changed = {k: v.clone() for k, v in inputs.items()}
    changed["completion_ids"][i, tool] = 1000  # another token where the tool's output was
    after = trl_logps(trainer, model, changed)
    sampled_after = [p for p in range(tool[0] + 1, rl) if traces[i].loss_mask[p] == 1]
    assert (before[i, : tool[0]] == after[i, : tool[0]]).all()
    assert (before[i, sampled_after] - after[i, sampled_after]).abs().max().item() > 1e-3


def test_trls_grpo_loss_and_gradient_match_a_per_trace_reference(tmp_path: Path) -> None:
    """TRL's own compute_loss (its default dapo loss: sum over trainable tokens / their count) on
    the adapter's batch, against the same loss computed trace by trace without padding: each
    trace's full prompt + response in context, -advantage * ratio on its sampled tokens only.
    With tool output hidden from attention (completion_mask = loss_mask) the cosine is ~0."""
    import torch

    trainer, model = grpo_trainer(tmp_path)
    traces, inputs = grpo_inputs(other_tool_output=True)
    assert trainer.loss_type == "dapo"
    loss = trainer.compute_loss(model, inputs)
    grads = torch.autograd.grad(loss, [p for p in model.parameters() if p.requires_grad])
    total = torch.zeros(())
    for t in traces:
        ids = torch.from_numpy(t.input_ids).unsqueeze(0)
        logits = model(input_ids=ids, logits_to_keep=len(t.response_ids) + 1).logits[0, :-1].float()
        lp = torch.log_softmax(logits, dim=-1).gather(-1, torch.from_numpy(t.response_ids).unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(lp - lp.detach())
        mask = torch.from_numpy(t.loss_mask.astype("float32"))
        total = total + (-POLAR_ADVANTAGE[t.session_id] * ratio * mask).sum()
    reference = total / sum(int(t.loss_mask.sum()) for t in traces)
    ref_grads = torch.autograd.grad(reference, [p for p in model.parameters() if p.requires_grad])
    assert loss.item() == pytest.approx(reference.item(), abs=1e-5)
    flat = torch.cat([g.flatten() for g in grads])
    ref_flat = torch.cat([g.flatten() for g in ref_grads])
    cosine = torch.nn.functional.cosine_similarity(flat, ref_flat, dim=0).item()
    assert cosine > 0.9999, cosine
    torch.testing.assert_close(flat, ref_flat, rtol=1e-3, atol=1e-6)

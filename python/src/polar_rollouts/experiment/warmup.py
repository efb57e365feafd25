"""``[warmup]``: supervised fine-tuning on demonstrations before the first RL step (TRL's own
``SFTTrainer``), written into the shared checkpoint folder so the engine starts on those weights
and they are version 0.

Why it exists: GRPO learns only from groups whose samples differ. A policy that never takes a
step of the skill (SmolLM2-135M-Instruct read the named file in 0 of 320 probe replies and 0 of
761 sessions' calls, docs/experiments.md) gives RL nothing to reinforce; a few demonstrations give
it a success rate above 0 to climb from.

A demonstration is TRL's conversational prompt-completion row: ``{"prompt": [messages],
"completion": [{"role": "assistant", "content": ...}]}``. The loss is on the completion only
(the prompt, a tool's output included, is context), as in RL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .config import ConfigError, WarmupConfig

ROLES = ("system", "user", "assistant")


def read_demonstrations(where: str, path: Path) -> list[dict[str, Any]]:
    """The file's rows, checked strictly (a row TRL would read differently is an error naming
    its line): exactly ``prompt`` and ``completion``, messages of exactly ``role`` and ``content``
    (a string), a completion of assistant messages only."""
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        at = f"{where}: warmup.demonstrations: {path}:{n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{at}: not JSON: {err}") from None
        if not isinstance(row, dict) or set(row) != {"prompt", "completion"}:
            keys = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise ConfigError(f'{at}: a row is {{"prompt": [messages], "completion": [messages]}}, got {keys}')
        for part in ("prompt", "completion"):
            messages = row[part]
            if not isinstance(messages, list) or not messages:
                raise ConfigError(f"{at}: {part} must be a non-empty array of messages")
            for i, m in enumerate(messages):
                if not isinstance(m, dict) or set(m) != {"role", "content"} or not isinstance(m["content"], str):
                    raise ConfigError(f'{at}: {part}[{i}] must be {{"role": ..., "content": "..."}} and nothing else')
                if m["role"] not in ROLES or (part == "completion" and m["role"] != "assistant"):
                    allowed = "assistant" if part == "completion" else ", ".join(ROLES)
                    raise ConfigError(f"{at}: {part}[{i}].role is {m['role']!r}; here it must be {allowed}")
        rows.append(row)
    if not rows:
        raise ConfigError(f"{where}: warmup.demonstrations: {path} has no rows")
    return rows


def warm_up(where: str, warmup: WarmupConfig, model_dir: Path, out: Path, seed: int,
            log: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    """Fine-tunes the weights in ``model_dir`` in place; returns what ``summary.json`` records."""
    import datasets
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    rows = read_demonstrations(where, warmup.demonstrations)
    t0 = time.monotonic()
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, attn_implementation="eager")
    config = SFTConfig(
        output_dir=str(out / "warmup"), num_train_epochs=warmup.epochs, learning_rate=warmup.learning_rate,
        per_device_train_batch_size=warmup.batch_size, completion_only_loss=True, use_cpu=True, bf16=False,
        seed=seed, report_to=[], save_strategy="no", logging_steps=1, disable_tqdm=True,
        lr_scheduler_type="constant",
    )  # fmt: skip
    trainer = SFTTrainer(model=model, args=config, train_dataset=datasets.Dataset.from_list(rows),
                         processing_class=tokenizer)  # fmt: skip
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    # The weights only. The folder's config and tokenizer stay as they were: training turned
    # `use_cache` off in the config (gradient checkpointing), SFTTrainer may set a pad token, and
    # the engine and the GRPO trainer read both from this folder.
    kept = {p: p.read_bytes() for p in model_dir.glob("*.json")}
    trainer.model.save_pretrained(str(model_dir), safe_serialization=True)
    for p, data in kept.items():
        p.write_bytes(data)
    record = {"demonstrations": len(rows), "epochs": warmup.epochs, "learning_rate": warmup.learning_rate,
              "optimizer_steps": int(trainer.state.global_step),
              "loss_first": round(losses[0], 4) if losses else None,
              "loss_last": round(losses[-1], 4) if losses else None,
              "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip
    log(f"experiment: warm-up on {len(rows)} demonstrations, {record['optimizer_steps']} steps, "
        f"loss {record['loss_first']} -> {record['loss_last']} in {record['seconds']}s; {model_dir}")  # fmt: skip
    return record

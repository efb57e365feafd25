"""Polar as slime's rollout function or generate function: configuration only (docs/trainers.md
"slime").

    --rollout-function-path polar_rollouts.plugins.slime_rollout.generate_rollout
      (or --custom-generate-function-path polar_rollouts.plugins.slime_rollout.generate)
    --custom-reward-post-process-path polar_rollouts.adapters.slime.post_process_rewards

with ``$POLAR_CONTROL_URL`` / ``$POLAR_CONTROL_TOKEN`` set, and each prompt's metadata (slime's
``--metadata-key`` column) naming its task: ``polar_task`` (a task request) or ``polar_task_id``
(a task of the file ``$POLAR_TASKS``).

Checked against THUDM/slime at 624b824a. A slime group is the ``n_samples_per_prompt`` copies
of one prompt, sharing ``group_index``; here it is one Polar task of that many sessions. Each
session becomes a ``list[Sample]``, one per trace (slime's "compact" shape, checked by its
``validate_rollout_id_annotated``), all with the session's ``rollout_id`` (unique in the
process), slime's ``group_index`` and ``index``, and ``metadata["polar"]["group_id"]`` rewritten
to slime's group: ``post_process_rewards`` then normalises over exactly slime's group, counting
each session once. The reward is Polar's, set on every sample, so slime's reward model is not
called for them. slime's temperature / top-p / top-k and response cap go into the task's
``agent.sampling`` (a task asking for other values is refused).

- ``generate_rollout`` (``--rollout-function-path``) takes ``rollout_batch_size`` groups from
  slime's data source and runs their tasks at once; for evaluation keep slime's own eval function
  (``--eval-function-path slime.rollout.sglang_rollout.generate_rollout``).
- ``generate`` (``--custom-generate-function-path``) is called by slime's
  ``generate_and_rm_group`` once per sample; the samples of a group wait for each other
  (``n_samples_per_prompt``, or ``n_samples_per_eval_prompt`` in evaluation) and share one task.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..adapters.behaviour_logprobs import RawLogprobs
from ..adapters.slime import to_slime_samples
from ..trace import Trace
from .task_group import (
    ENV_TASKS,
    PluginError,
    TaskGroups,
    control_client,
    sessions_of,
    task_for,
    task_id_for,
    with_trainer_sampling,
)

CHECKED_SLIME = "624b824a"
TIMEOUT_S = float(os.environ.get("POLAR_TASK_TIMEOUT_S", "3600"))
_groups: dict[str, TaskGroups] = {}


def _sample_class() -> Any:
    try:
        from slime.utils.types import Sample
    except ModuleNotFoundError as err:
        raise ImportError(
            f"polar_rollouts.plugins.slime_rollout runs inside slime ({err.name} is missing): start it from "
            "slime's train.py with --rollout-function-path or --custom-generate-function-path"
        ) from err
    return Sample


def session_samples(traces: Sequence[Trace], prompt: Any, *, raw_logprobs: RawLogprobs = "refuse") -> list[Any]:
    """One session's traces as slime Samples in slime's group: ``prompt`` is the Sample slime
    handed out (its ``group_index``, ``index``, prompt, label and metadata are kept)."""
    Sample = _sample_class()
    out = []
    for d in to_slime_samples(traces, raw_logprobs=raw_logprobs):
        # The session keeps the unique rollout_id the adapter drew; the group becomes slime's.
        d["group_index"] = prompt.group_index
        d["index"] = prompt.index
        d["metadata"]["polar"]["group_id"] = f"slime-group-{prompt.group_index}"
        d["metadata"] = {**(prompt.metadata or {}), **d["metadata"]}
        sample = Sample.from_dict(d)
        sample.prompt = prompt.prompt
        sample.label = prompt.label
        out.append(sample)
    return out


def _task(sample: Any) -> dict[str, Any]:
    return task_for(sample.metadata, os.environ.get(ENV_TASKS), where=f"slime sample {sample.index} (group {sample.group_index})")


def generate_rollout(args: Any, rollout_id: int, data_source: Any, evaluation: bool = False) -> Any:
    """slime's ``--rollout-function-path``: ``RolloutFnTrainOutput`` with one Polar task per group."""
    from slime.rollout.base_types import RolloutFnTrainOutput

    if evaluation:
        raise PluginError(
            "polar_rollouts.plugins.slime_rollout.generate_rollout does not evaluate: set --eval-function-path "
            "slime.rollout.sglang_rollout.generate_rollout (slime's own) for evaluation"
        )
    client = control_client(None, None, who="slime rollout function")
    groups = data_source.get_samples(args.rollout_batch_size)

    sampling = {"temperature": args.rollout_temperature, "top_p": args.rollout_top_p, "top_k": args.rollout_top_k}

    def run(group: list[Any]) -> list[list[Trace]]:
        task = with_trainer_sampling(_task(group[0]), sampling, args.rollout_max_response_len, where="slime")
        request = {**task, "task_id": task_id_for(f"slime-{rollout_id}", str(group[0].group_index))}
        request["num_samples"] = len(group)
        return sessions_of(client.run(request, timeout_s=TIMEOUT_S), len(group), request["task_id"])

    with ThreadPoolExecutor(max_workers=max(1, min(32, len(groups)))) as pool:
        results = list(pool.map(run, groups))
    samples = [
        [session_samples(traces, prompt) for prompt, traces in zip(group, sessions)]
        for group, sessions in zip(groups, results)
    ]
    return RolloutFnTrainOutput(samples=samples, metrics={"polar/tasks": len(groups)})


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any], evaluation: bool = False) -> list[Any]:
    """slime's ``--custom-generate-function-path``: this sample's Polar session as ``list[Sample]``."""
    client = control_client(None, None, who="slime generate function")
    key = f"{client.base_url} {id(asyncio.get_running_loop())}"
    if key not in _groups:
        _groups[key] = TaskGroups(client, prefix="slime", timeout_s=TIMEOUT_S)
    size = args.n_samples_per_eval_prompt if evaluation else args.n_samples_per_prompt
    task = with_trainer_sampling(_task(sample), sampling_params, sampling_params.get("max_new_tokens"), where="slime")
    _, traces, _ = await _groups[key].session(str(sample.group_index), task, size=int(size))
    return session_samples(traces, sample)

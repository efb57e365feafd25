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
  slime's data source and runs their tasks at once; slime calls it for evaluation too (its
  default ``--eval-function-path`` is the rollout function), where it runs slime's own
  ``eval_rollout`` with ``generate`` below as the generate function.
- ``generate`` (``--custom-generate-function-path``) is called by slime's
  ``generate_and_rm_group`` once per sample; the samples of a group wait for each other
  (``n_samples_per_prompt``, or ``n_samples_per_eval_prompt`` in evaluation) and share one task.

Engines and versions: before each group's task, Polar is made to route to slime's SGLang router
(``args.sglang_router_ip`` / ``sglang_router_port``, which slime keeps in step with its engines)
and nothing else (``EngineRoutes``); a training rollout stamps slime's ``rollout_id`` as the
policy version (the weights that sample rollout ``r`` were synced by ``actor_model.update_weights()``
after ``r`` training steps). Evaluation stamps nothing: its captures keep the version of the
weights it sampled with.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..adapters.behaviour_logprobs import RawLogprobs
from ..adapters.slime import to_slime_samples
from ..client import ControlClient
from ..trace import Trace
from .engine_routes import EngineRoutes, stamp_version
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
_routes: dict[str, EngineRoutes] = {}
_stamped: dict[str, int] = {}
# The Polar generate function, which slime's own eval_rollout calls for each evaluation sample.
GENERATE_PATH = f"{__name__}.generate"


def _router(args: Any) -> str:
    ip, port = getattr(args, "sglang_router_ip", None), getattr(args, "sglang_router_port", None)
    if not ip or not port:
        raise PluginError(
            "slime has no SGLang router (args.sglang_router_ip / sglang_router_port unset), so Polar has none of "
            f"slime's engines to route to (checked against slime {CHECKED_SLIME})"
        )
    return f"[{ip}]:{port}" if ":" in str(ip) else f"{ip}:{port}"


def _prepare(client: ControlClient, args: Any, rollout_id: int | None, evaluation: bool) -> None:
    """Polar routes to slime's router only; a training rollout's id becomes the policy version."""
    who = "slime plug-in"
    _routes.setdefault(client.base_url, EngineRoutes(client, who=who)).ensure([_router(args)])
    if evaluation or rollout_id is None:
        return
    if _stamped.get(client.base_url, -1) < rollout_id:
        stamp_version(client, rollout_id, who=who)
        _stamped[client.base_url] = rollout_id


def _current_rollout_id() -> int | None:
    """The rollout slime's RolloutManager is running (``generate`` / ``eval`` set it before
    calling the rollout function); the generate function is not handed it."""
    from slime.rollout import sample_hooks

    value = getattr(sample_hooks, "_current_rollout_id", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
        # slime's own evaluation (its eval datasets, n_samples_per_eval_prompt, metrics), each sample
        # a Polar session through ``generate``.
        import copy

        from slime.rollout.sglang_rollout import eval_rollout
        from slime.utils.async_utils import run as run_async

        eval_args = copy.copy(args)
        eval_args.custom_generate_function_path = GENERATE_PATH
        output, _ = run_async(eval_rollout(eval_args, rollout_id))
        return output
    client = control_client(None, None, who="slime rollout function")
    _prepare(client, args, rollout_id, evaluation=False)
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
    size = int(args.n_samples_per_eval_prompt if evaluation else args.n_samples_per_prompt)
    task = with_trainer_sampling(_task(sample), sampling_params, sampling_params.get("max_new_tokens"), where="slime")
    rollout_id = _current_rollout_id()

    async def prepare() -> None:
        await asyncio.get_running_loop().run_in_executor(None, _prepare, client, args, rollout_id, evaluation)

    group = str(sample.group_index)
    if evaluation:
        # slime's eval_rollout numbers each eval data set's samples in order, a prompt's copies next
        # to each other, and gives them no group_index; the prompt tells data sets apart.
        prompt = hashlib.sha256(repr(sample.prompt).encode()).hexdigest()[:12]
        group = f"eval-{rollout_id}-{sample.index // size}-{prompt}"
    _, traces, _ = await _groups[key].session(group, task, size=size, prepare=prepare)
    return session_samples(traces, sample)

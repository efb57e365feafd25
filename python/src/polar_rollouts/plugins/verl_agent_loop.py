"""Polar as verl's agent loop ``polar``: configuration only (docs/trainers.md "verl").

    actor_rollout_ref.rollout.agent.agent_loop_config_path=<this directory>/verl_agent_loops.yaml
    actor_rollout_ref.rollout.agent.default_agent_loop=polar
    algorithm.adv_estimator=grpo

with ``$POLAR_CONTROL_URL`` / ``$POLAR_CONTROL_TOKEN`` (what ``polar serve`` prints) in the
workers' environment, and each dataset row's ``extra_info`` naming its task (``polar_task``: a
task request; or ``polar_task_id``: a task of the file ``$POLAR_TASKS``).

Checked against verl 0.9.1 (``verl/experimental/agent_loop/agent_loop.py``): the worker starts
one ``run(sampling_params, **row)`` per row, the ``rollout.n`` repeats of a prompt sharing its
``uid``. The rows of a uid become one Polar task of that many sessions (``TaskGroups``), each
row one session, so verl's group is Polar's group. The output is the session's trace: prompt,
response, ``response_mask`` = ``loss_mask``, ``response_logprobs`` = the engine's (checked for
what they mean), ``reward_score`` = Polar's reward.

Sessions split into several traces: verl's v1 trainer (``trainer.use_v1``, the default) passes
``session_id`` to ``run`` and takes a list of outputs per session; its GRPO
(``compute_advantage_for_multi_trajectories``) scores each ``{uid}_{session_id}`` once from its
last output, which is Polar's session rule, so there ``algorithm.adv_estimator`` must be
``grpo`` (``polar_grpo`` would see bare uids; refused up front). The legacy worker takes one
output per row: a split session is refused there, naming ``trainer.use_v1=true``. There one row
is one session, so ``grpo`` and ``polar_grpo`` (which counts a bare uid's row as one session)
give the same numbers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from ..adapters.behaviour_logprobs import RawLogprobs, behaviour_logprobs
from ..adapters.verl_estimator import NAME as POLAR_GRPO
from ..client import ControlClient
from ..trace import Trace
from .engine_routes import EngineRoutes, stamp_version, version_range
from .task_group import PluginError, TaskGroups, control_client, task_for, with_trainer_sampling

CHECKED_VERL = "0.9.1"
AGENT_LOOPS_YAML = Path(__file__).with_name("verl_agent_loops.yaml")
WHO = "verl agent loop 'polar'"
_groups: dict[tuple[str, str], TaskGroups] = {}
_routes: dict[str, EngineRoutes] = {}
_stamped: dict[str, int] = {}
_warned: set[str] = set()
log = logging.getLogger(__name__)

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
except ModuleNotFoundError as err:  # pragma: no cover - the message is the point
    raise ImportError(
        f"polar_rollouts.plugins.verl_agent_loop needs verl's agent loop ({err.name} is missing): "
        "pip install './python[torch,verl]' && pip install --no-deps verl==0.9.1 (docs/trainers.md)"
    ) from err


def _output(trace: Trace, *, prompt_length: int, response_length: int, raw_logprobs: RawLogprobs, elapsed: float) -> Any:
    where = f"{trace.session_id} trace {trace.trace_index}"
    if trace.reward is None:
        raise PluginError(f"{where} has no reward (status {trace.status}): the task's evaluator scored nothing")
    if len(trace.prompt_ids) > prompt_length:
        raise PluginError(
            f"{where}: its prompt has {len(trace.prompt_ids)} tokens, over verl's {prompt_length}: raise data.max_prompt_length"
        )
    if len(trace.response_ids) == 0:
        raise PluginError(f"{where} has no response tokens to put its reward on")
    # verl's response budget is per session; the proxy caps each call at it (agent.sampling.max_tokens),
    # and a session whose turns add up to more is cut here as verl cuts its own agent loops'
    # (response_ids[:response_length]) and marked, never refused: one long session must not stop the run.
    cut = len(trace.response_ids) > response_length
    keep = slice(0, response_length)
    logprobs = behaviour_logprobs(trace, raw_logprobs=raw_logprobs)
    return AgentLoopOutput(
        prompt_ids=trace.prompt_ids.tolist(),
        response_ids=trace.response_ids[keep].tolist(),
        response_mask=trace.loss_mask[keep].astype(int).tolist(),
        response_logprobs=logprobs[keep].tolist(),
        reward_score=float(trace.reward),
        num_turns=2,
        metrics=AgentLoopMetrics(generate_sequences=elapsed),
        extra_fields={
            # verl's reward loop fills this; with the reward set here, v1 copies it to a session's
            # earlier outputs and fails without it.
            "reward_extra_info": {},
            "polar_session_id": trace.session_id,
            "polar_trace_index": trace.trace_index,
            "polar_status": trace.status,
            "polar_orphan": trace.orphan,
            "polar_policy_version": trace.policy_version,
            # The tokens past verl's rollout.response_length were sampled but are not trained on.
            "polar_cut": "response_length" if cut else None,
            "polar_response_tokens": len(trace.response_ids),
        },
    )


@register("polar")
class PolarAgentLoop(AgentLoopBase):  # type: ignore[misc]
    """One Polar session per verl row; see the module doc. Settings (keys of the agent-loop YAML
    entry, all optional): ``control_url``, ``control_token``, ``tasks``, ``timeout_s``,
    ``raw_logprobs``."""

    def __init__(
        self,
        *args: Any,
        control_url: str | None = None,
        control_token: str | None = None,
        tasks: str | None = None,
        timeout_s: float = 3600.0,
        poll_s: float = 1.0,
        raw_logprobs: RawLogprobs = "refuse",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.control = (control_url, control_token)
        self.timing = (timeout_s, poll_s)
        self.tasks = tasks
        self.raw_logprobs = raw_logprobs

    def _client(self) -> ControlClient:
        # Made in run(), so a refusal reaches verl's log as itself, not inside hydra's wrapper.
        return control_client(*self.control, who=WHO)

    def _groups(self, client: ControlClient) -> TaskGroups:
        # Agent loops are made anew for every row; the groups must outlive them.
        key = (client.base_url, str(id(self.loop)))
        if key not in _groups:
            _groups[key] = TaskGroups(client, prefix="verl", timeout_s=self.timing[0], poll_s=self.timing[1])
        return _groups[key]

    async def _engines(self) -> list[str]:
        """The servers verl started, from verl's own request router: the agent loop's
        ``server_manager`` (verl 0.9.1's ``LLMServerClient``) routes every generate call through
        the ``GlobalRequestLoadBalancer`` actor, whose server ids are the replicas'
        ``server_addresses``; verl adds and removes servers there when its engine set changes."""
        balancer = getattr(self.server_manager, "_load_balancer", None)
        if balancer is None:
            raise PluginError(
                f"{WHO}: verl gave the agent loop no LLM server client with a load balancer, so the servers "
                f"verl started cannot be read (checked against verl {CHECKED_VERL}'s LLMServerClient)"
            )
        servers = await balancer.get_all_servers.remote()
        return [str(s) for s in servers]

    async def _prepare(self, client: ControlClient, step: int | None) -> None:
        """Before a group's task: Polar routes to verl's servers only, and, on verl's synchronous
        v1 trainer, the weights' version is stamped. There a row of step ``s`` is sampled by the
        weights verl synced with ``CheckpointEngineManager.update_weights(s - 1)`` (``on_init_end``
        with 0, then ``on_step_end`` of step ``s - 1``), and no row of another step is in flight."""
        engines = await self._engines()
        routes = _routes.setdefault(client.base_url, EngineRoutes(client, who=WHO))
        await asyncio.get_running_loop().run_in_executor(None, routes.ensure, engines)
        if step is None:
            return
        version = max(step - 1, 0)
        if _stamped.get(client.base_url, -1) < version:
            await asyncio.get_running_loop().run_in_executor(None, lambda: stamp_version(client, version, who=WHO))
            _stamped[client.base_url] = version

    def _sync_step(self, row: dict[str, Any], v1: bool) -> int | None:
        """The row's step where it names the sampling weights (v1, ``trainer_mode: sync``)."""
        if not v1:
            if "legacy" not in _warned:
                _warned.add("legacy")
                log.warning(
                    "%s: verl's legacy worker (trainer.use_v1=false) hands agent loops no step, so Polar's "
                    "captures carry only the engines' own versions; trainer.use_v1=true stamps verl's step",
                    WHO,
                )
            return None
        mode = str(self.config.trainer.get("v1", {}).get("trainer_mode", "sync"))
        if mode != "sync":
            return None  # async modes sample across weight updates: only the engine can name its weights
        step = row.get("global_steps")
        if isinstance(step, bool) or not isinstance(step, int | float) or int(step) < 0:
            raise PluginError(f"{WHO}: verl's v1 row carries no global_steps ({step!r}); checked against verl {CHECKED_VERL}")
        return int(step)

    async def run(self, sampling_params: dict[str, Any], **row: Any) -> Any:
        v1 = "session_id" in row  # verl's v1 worker (AgentLoopWorkerTQ) numbers the sessions itself
        estimator = str(self.config.algorithm.get("adv_estimator", ""))
        if v1 and estimator == POLAR_GRPO:
            raise PluginError(
                "verl's v1 trainer (trainer.use_v1=true) hands advantage estimators bare uids: set "
                "algorithm.adv_estimator=grpo, which on v1 scores each session ({uid}_{session_id}) once"
            )
        uid = str(row.get("uid", ""))
        if not uid:
            raise PluginError("verl row without a uid: the polar agent loop groups rows by verl's uid")
        extra = row.get("extra_info")
        task = task_for(extra if isinstance(extra, dict) else None, self.tasks, where=f"verl row (uid {uid})")
        rollout = self.rollout_config
        task = with_trainer_sampling(task, sampling_params, rollout.response_length, where=f"verl row (uid {uid})")
        client = self._client()
        step = self._sync_step(row, v1)
        started = time.monotonic()
        task_id, traces, size = await self._groups(client).session(uid, task, prepare=lambda: self._prepare(client, step))
        if not v1 and len(traces) > 1:
            raise PluginError(
                f"task {task_id}: session {traces[0].session_id} split into {len(traces)} traces, and verl's legacy "
                "agent-loop worker takes one output per row: use trainer.use_v1=true (the default), which takes them all"
            )
        low, high = version_range(traces)
        if v1 and (low is None or high is None):
            raise PluginError(
                f"task {task_id}: session {traces[0].session_id}'s captures carry no step version, and verl's v1 "
                "trainer reads min_global_steps / max_global_steps for its staleness control: with "
                "trainer.v1.trainer_mode other than sync, serve engines that report their weights' version "
                "(vLLM's /weight_info: docs/engines.md)"
            )
        outputs = [
            _output(
                t,
                prompt_length=rollout.prompt_length,
                response_length=rollout.response_length,
                raw_logprobs=self.raw_logprobs,
                elapsed=time.monotonic() - started,
            )
            for t in traces
        ]
        for out in outputs:
            out.extra_fields["polar_task_id"] = task_id
            out.extra_fields["polar_group_size"] = size
            # verl's names for the versions a trajectory was sampled across (v1's staleness control).
            out.extra_fields["min_global_steps"] = low
            out.extra_fields["max_global_steps"] = high
        return outputs if v1 else outputs[0]


if __name__ == "__main__":
    # `python -m polar_rollouts.plugins.verl_agent_loop`: the path for agent_loop_config_path.
    print(AGENT_LOOPS_YAML)

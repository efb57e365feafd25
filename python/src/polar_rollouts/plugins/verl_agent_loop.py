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

import time
from pathlib import Path
from typing import Any

from ..adapters.behaviour_logprobs import RawLogprobs, behaviour_logprobs
from ..adapters.verl_estimator import NAME as POLAR_GRPO
from ..trace import Trace
from .task_group import PluginError, TaskGroups, control_client, task_for, with_trainer_sampling

CHECKED_VERL = "0.9.1"
AGENT_LOOPS_YAML = Path(__file__).with_name("verl_agent_loops.yaml")
_groups: dict[tuple[str, str], TaskGroups] = {}

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
    for what, have, limit, setting in (
        ("prompt", len(trace.prompt_ids), prompt_length, "data.max_prompt_length"),
        ("response", len(trace.response_ids), response_length, "data.max_response_length"),
    ):
        if have > limit:
            raise PluginError(f"{where}: its {what} has {have} tokens, over verl's {limit}: raise {setting}")
    if len(trace.response_ids) == 0:
        raise PluginError(f"{where} has no response tokens to put its reward on")
    return AgentLoopOutput(
        prompt_ids=trace.prompt_ids.tolist(),
        response_ids=trace.response_ids.tolist(),
        response_mask=trace.loss_mask.astype(int).tolist(),
        response_logprobs=behaviour_logprobs(trace, raw_logprobs=raw_logprobs).tolist(),
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

    def _groups(self) -> TaskGroups:
        # Made in run(), so a refusal reaches verl's log as itself, not inside hydra's wrapper.
        client = control_client(*self.control, who="verl agent loop 'polar'")
        # Agent loops are made anew for every row; the groups must outlive them.
        key = (client.base_url, str(id(self.loop)))
        if key not in _groups:
            _groups[key] = TaskGroups(client, prefix="verl", timeout_s=self.timing[0], poll_s=self.timing[1])
        return _groups[key]

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
        started = time.monotonic()
        task_id, traces, size = await self._groups().session(uid, task)
        if not v1 and len(traces) > 1:
            raise PluginError(
                f"task {task_id}: session {traces[0].session_id} split into {len(traces)} traces, and verl's legacy "
                "agent-loop worker takes one output per row: use trainer.use_v1=true (the default), which takes them all"
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
        return outputs if v1 else outputs[0]


if __name__ == "__main__":
    # `python -m polar_rollouts.plugins.verl_agent_loop`: the path for agent_loop_config_path.
    print(AGENT_LOOPS_YAML)

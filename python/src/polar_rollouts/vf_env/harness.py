"""The verifiers ``Harness`` whose program is a Polar session.

``launch`` submits the rollout's task to Polar's control API as one session, waits for its
result, and commits the session's model calls to the verifiers trace (replay.py). The harness
CLI runs in Polar's runtime against Polar's proxy, so verifiers' interception endpoint is not
called: its per-call limits and hooks do not apply, Polar's task fields (timeout, sampling)
do. Polar samples from its own upstream (``polar serve --upstream``), not from ``--client``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from pydantic import Field
from verifiers.v1.clients import ModelContext
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.errors import HarnessError
from verifiers.v1.harness import Harness
from verifiers.v1.runtimes import ProgramResult, Runtime
from verifiers.v1.task import TaskData
from verifiers.v1.trace import Trace

from ..client import ControlApiError, ControlClient, TaskFailed
from ..results import SessionResult
from ..store import open_store
from .replay import capture_reader, commit_session


class PolarHarnessConfig(HarnessConfig):
    control: str = Field(default_factory=lambda: os.environ.get("POLAR_CONTROL_URL", ""))
    """The Polar proxy with the control API (what `polar serve` prints as --proxy); default $POLAR_CONTROL_URL."""
    control_token: str = Field(default_factory=lambda: os.environ.get("POLAR_CONTROL_TOKEN", ""))
    """Its control token; default $POLAR_CONTROL_TOKEN."""
    store: str = Field(default_factory=lambda: os.environ.get("POLAR_STORE", ""))
    """The store Polar writes (a directory such as .polar/serve/store, or s3://bucket/prefix):
    the session's captures hold each call's messages; default $POLAR_STORE."""
    timeout: float = 3600.0
    """Seconds to wait for the session's result."""


class PolarHarness(Harness[PolarHarnessConfig]):
    # Nothing runs in verifiers' runtime (the subprocess runtime is enough), the prompt is the
    # Polar task's instruction, and a system prompt is refused by the taskset, not folded here.
    NEEDS_CONTAINER: ClassVar[bool] = False
    EXECUTES_CODE: ClassVar[bool] = False
    APPENDS_SYSTEM_PROMPT: ClassVar[bool] = True

    async def launch(
        self,
        ctx: ModelContext,
        trace: Trace,
        runtime: Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: TaskData,
        tool_interception_url: str | None = None,
    ) -> ProgramResult:
        request = getattr(data, "request", None)
        if not isinstance(request, dict):
            raise HarnessError("the Polar harness runs Polar tasks: use it with the polar-verifiers taskset")
        task = session_task(request, trace.id, ctx)
        try:
            result = await asyncio.to_thread(self._run, task)
        except asyncio.CancelledError:
            # verifiers' rollout timeout cancels launch(): stop the Polar session too (its
            # waiting thread then sees the task cancelled and ends) rather than let it run on.
            await asyncio.to_thread(self._cancel, task["task_id"])
            raise
        calls = commit_session(
            trace, result, capture_reader(open_store(self.config.store), result.task_id, result.session_id)
        )
        trace.info["polar"] = {
            "task_id": result.task_id,
            "session_id": result.session_id,
            "status": result.status,
            "reward": result.reward,
            "traces": len(result.traces),
            "calls": calls,
            "error": result.error,
        }
        if result.reward is not None:
            trace.record_metric("polar_reward", float(result.reward))
        return ProgramResult(exit_code=0 if result.status == "COMPLETED" else 1, stdout="", stderr=result.error or "")

    def _run(self, task: dict[str, Any]) -> SessionResult:
        if not self.config.control or not self.config.control_token or not self.config.store:
            raise HarnessError(
                "set the harness's control, control_token and store "
                "(--env.agent.harness.control URL ..., or $POLAR_CONTROL_URL, $POLAR_CONTROL_TOKEN, $POLAR_STORE)"
            )
        client = ControlClient(self.config.control, self.config.control_token, store=open_store(self.config.store))
        try:
            submitted = client.submit(task)
            for result in client.stream_results(submitted["task_id"], timeout_s=self.config.timeout, poll_s=0.5):
                return result
        except (ControlApiError, TaskFailed) as err:
            raise HarnessError(f"Polar task {task['task_id']}: {err}") from err
        raise HarnessError(f"Polar task {task['task_id']} completed without a session result")

    def _cancel(self, task_id: str) -> None:
        try:
            ControlClient(self.config.control, self.config.control_token).cancel(task_id)
        except ControlApiError:
            pass  # already completed (409) or unreachable: nothing left to stop from here


def session_task(request: dict[str, Any], rollout_id: str, ctx: ModelContext) -> dict[str, Any]:
    """The TaskRequest of one rollout: the taskset's task, one sample, its own id (the trace id,
    so every rollout is a fresh session), the rollout's sampling where the task sets none."""
    task = dict(request)
    task["task_id"] = f"{request['task_id']}.{rollout_id}"[-128:].lstrip("._-")
    task["num_samples"] = 1
    sampling = {
        k: v
        for k, v in (
            ("temperature", ctx.sampling.temperature),
            ("top_p", ctx.sampling.top_p),
            ("max_tokens", ctx.sampling.max_tokens),
        )
        if v is not None
    }
    if sampling:
        agent = dict(task.get("agent") or {})
        agent["sampling"] = {**sampling, **(agent.get("sampling") or {})}
        task["agent"] = agent
    return task

"""The verifiers ``Harness`` whose program is a Polar session.

``launch`` joins the rollout to its example's group (the rollouts of one example that verifiers
starts together become one Polar task, ``num_samples`` = their number, ``gather.py``), waits for
its session's result and commits the session's model calls to the verifiers trace (replay.py).
The harness CLI runs in Polar's runtime against Polar's proxy, so verifiers' interception
endpoint is not called: its per-call limits and hooks do not apply, Polar's task fields do.
The rollout's model (``ctx.model``: prime-rl's per-step LoRA adapter) and sampling
(``ctx.sampling``, ``cache_salt`` included) are the task's, applied by the proxy to every call.

The control token is read from ``$POLAR_CONTROL_TOKEN`` or the file ``control_token_file``
names, never a config field: verifiers records the harness config in every trace it writes
(``traces.jsonl``, stdout with ``--no-rich``) and sends it to its env server's clients.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from verifiers.v1.clients import ModelContext
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.errors import HarnessError
from verifiers.v1.harness import Harness
from verifiers.v1.runtimes import ProgramResult, Runtime
from verifiers.v1.task import TaskData
from verifiers.v1.trace import Trace

from ..client import ControlApiError, ControlClient, TaskFailed
from ..gather import Gatherer
from ..results import SessionResult
from ..store import open_store
from ..register_allow import RegisterRefused, allowed_replica
from .replay import capture_reader, commit_session
from .sampling import session_sampling
from .taskset import operator_request


class PolarHarnessConfig(HarnessConfig):
    control: str = ""
    """The Polar proxy with the control API (what `polar serve` prints as --proxy); default $POLAR_CONTROL_URL."""
    control_token_file: str = ""
    """A file holding the control token; default: the token is $POLAR_CONTROL_TOKEN (never a flag:
    verifiers writes the harness config into every trace)."""
    store: str = ""
    """The store Polar writes (a directory such as .polar/serve/store, or s3://bucket/prefix):
    the session's captures hold each call's messages; default $POLAR_STORE."""
    timeout: float = 3600.0
    """Seconds to wait for the session's result."""
    group_size: int = 0
    """Rollouts per example (-r / rollouts_per_example): a group is submitted as soon as it has
    them; 0 = submit after gather_seconds without a new rollout of the example."""
    gather_seconds: float = 2.0
    """How long an example's group waits for another rollout (group_size 0)."""
    group_timeout: float = 600.0
    """With group_size: seconds a group waits for all its rollouts; past it every one fails, naming the group."""
    register_client: bool = False
    """Register the rollout's client base URL (prime-rl's inference server) as a replica of
    Polar's proxy (POST /v1/replicas) before the session, so Polar samples from it. Only a URL
    in register_allow is registered: the client names it, the operator's control token sends it."""
    register_allow: list[str] | str = []
    """The engine URLs (scheme, host, port; e.g. http://10.0.0.5:8000) a client may have registered
    with register_client; any other is refused, naming it. A TOML list, or one comma-separated
    string (verifiers' flags take no list: --env.agent.harness.register-allow URL,URL)."""


class PolarHarness(Harness[PolarHarnessConfig]):
    # Nothing runs in verifiers' runtime (the subprocess runtime is enough), the prompt is the
    # Polar task's instruction, and a system prompt is refused by the taskset, not folded here.
    NEEDS_CONTAINER: ClassVar[bool] = False
    EXECUTES_CODE: ClassVar[bool] = False
    APPENDS_SYSTEM_PROMPT: ClassVar[bool] = True

    def __init__(self, config: PolarHarnessConfig) -> None:
        super().__init__(config)
        self._store = config.store or os.environ.get("POLAR_STORE", "")
        self._client, self._gatherer = _shared(config, self._store)

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
        request = _own_request(data)
        task = session_task(request, ctx)
        if self.config.register_client:
            try:
                allow = self.config.register_allow
                if isinstance(allow, str):
                    allow = [u for u in allow.split(",") if u.strip()]
                root = allowed_replica(str(ctx.client.base_url), allow)
            except RegisterRefused as err:
                raise HarnessError(str(err)) from None
            await asyncio.to_thread(self._register, root)
        identity = hashlib.sha256(json.dumps(task, sort_keys=True).encode()).hexdigest()
        ticket = self._gatherer.join(identity, request["task_id"], task, None)
        try:
            result = await asyncio.to_thread(self._gatherer.wait, ticket, timeout_s=self.config.timeout + 60)
        except asyncio.CancelledError:
            # verifiers' rollout timeout cancels launch(): stop the Polar task too (the group's
            # rollouts share the timeout) rather than let it run on.
            await asyncio.to_thread(self._cancel, ticket.task_id)
            raise
        except (ControlApiError, TaskFailed, TimeoutError) as err:
            raise HarnessError(f"Polar task {ticket.task_id}: {err}") from err
        except Exception as err:  # noqa: BLE001 (verifiers records a HarnessError as the rollout's failure)
            raise HarnessError(f"Polar task {ticket.task_id}: {type(err).__name__}: {err}") from err
        try:
            calls = commit_session(
                trace, result, capture_reader(open_store(self._store), result.task_id, result.session_id)
            )
        except Exception as err:  # noqa: BLE001
            raise HarnessError(
                f"Polar session {result.session_id}: reading its captures: {type(err).__name__}: {err}"
            ) from err
        short = self._gatherer.short_reason(ticket)
        trace.info["polar"] = {
            "task_id": result.task_id,
            "group_id": result.task_id,
            "session_id": result.session_id,
            "sample_index": result.sample_index,
            "group_size": len(ticket.group.members),
            "status": result.status,
            "reward": result.reward,
            "traces": len(result.traces),
            "calls": calls,
            "error": result.error,
            "group_short": short,
        }
        if short is not None:
            trace.record_metric("polar_group_short", 1.0)
        if result.reward is not None:
            trace.record_metric("polar_reward", float(result.reward))
        return ProgramResult(exit_code=0 if result.status == "COMPLETED" else 1, stdout="", stderr=result.error or "")

    def _register(self, root: str) -> None:
        try:
            self._client.register_replica(root)
        except ControlApiError as err:
            raise HarnessError(f"registering the client's engine {root} with Polar's proxy: {err}") from err

    def _cancel(self, task_id: str) -> None:
        try:
            self._client.cancel(task_id)
        except ControlApiError:
            pass  # already completed (409) or unreachable: nothing left to stop from here


# verifiers loads a harness per episode (agent.py), and an example's rollouts are separate
# episodes: the client and the gatherer live per process, one per control API, store and grouping.
_SHARED: dict[tuple[Any, ...], tuple[ControlClient, Gatherer]] = {}
_SHARED_LOCK = threading.Lock()


def _shared(config: PolarHarnessConfig, store: str) -> tuple[ControlClient, Gatherer]:
    control = config.control or os.environ.get("POLAR_CONTROL_URL", "")
    token = _control_token(config)
    if not control or not token or not store:
        raise ValueError(
            "the polar-verifiers harness needs the control URL, its token and the store: "
            "$POLAR_CONTROL_URL (or --env.agent.harness.control), $POLAR_CONTROL_TOKEN (or "
            "--env.agent.harness.control-token-file FILE) and $POLAR_STORE (or --env.agent.harness.store)"
        )
    key = (
        control,
        hashlib.sha256(token.encode()).hexdigest(),
        store,
        config.gather_seconds,
        config.group_size,
        config.group_timeout,
        config.timeout,
    )
    with _SHARED_LOCK:
        if key in _SHARED:
            return _SHARED[key]
        client = ControlClient(control, token, store=open_store(store))
        # Checked when the environment loads, so a wrong token or URL stops vf-eval (and the env
        # server) before the first rollout instead of failing every rollout quietly: an unknown
        # task is a 404 only to a caller the control API let in.
        try:
            client.status("polar-verifiers-credential-check")
        except ControlApiError as err:
            if err.status != 404:
                raise ValueError(f"the Polar control API at {control} refused the harness: {err}") from None

        def drive(task: dict[str, Any]) -> Iterator[SessionResult]:
            submitted = client.submit(task)
            yield from client.stream_results(submitted["task_id"], timeout_s=config.timeout, poll_s=0.5)

        gatherer = Gatherer(
            drive,
            f"vf{secrets.token_hex(4)}",
            gather_s=config.gather_seconds,
            group_size=config.group_size,
            group_timeout_s=config.group_timeout,
        )
        _SHARED[key] = (client, gatherer)
        return client, gatherer


def _control_token(config: PolarHarnessConfig) -> str:
    if config.control_token_file:
        return Path(config.control_token_file).expanduser().read_text(encoding="utf-8").strip()
    return os.environ.get("POLAR_CONTROL_TOKEN", "")


def _own_request(data: TaskData) -> dict[str, Any]:
    """The operator's request for this task: what the task file says, whatever the rollout's task
    data carries (an env server's client sends it, and may not shape the task)."""
    wire = getattr(data, "request", None)
    if not isinstance(wire, dict):
        raise HarnessError("the Polar harness runs Polar tasks: use it with the polar-verifiers taskset")
    own, files = operator_request(str(data.id))
    if own is None:
        where = ", ".join(str(f) for f in files) or "none (--env.taskset.tasks)"
        raise HarnessError(f"task {data.id!r} is not in this environment's Polar task file ({where})")
    differs = sorted(k for k in set(own) | set(wire) if own.get(k) != wire.get(k))
    if differs:
        raise HarnessError(
            f"task {data.id!r}: the rollout's request differs from the task file in {', '.join(differs)}; "
            "the environment runs its own tasks, never a client's version of them"
        )
    return own


def session_task(request: dict[str, Any], ctx: ModelContext) -> dict[str, Any]:
    """The TaskRequest of one rollout's group: the task file's task with the rollout's model
    (the engine serves it: a LoRA adapter's name) and its sampling over the task's."""
    task = {k: v for k, v in request.items() if k not in ("task_id", "num_samples")}
    agent = dict(task.get("agent") or {})
    if ctx.model:
        agent["model"] = ctx.model
    sampling = session_sampling(ctx.sampling)
    if sampling:
        agent["sampling"] = {**(agent.get("sampling") or {}), **sampling}
    task["agent"] = agent
    return task

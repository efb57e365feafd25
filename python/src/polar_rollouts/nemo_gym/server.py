"""Polar as a NeMo Gym agent server: the routes NeMo Gym's rollout collection calls.

- ``GET /global_config_dict_yaml``: the config a NeMo Gym head server serves, naming this server,
  so ``ng_collect_rollouts "+head_server={host:'polar:T@H',port:P}" +agent_name=NAME`` finds it
  without ``ng_run`` (collection resolves ``cfg[NAME]`` → first server → host and port).
- ``POST /run``: one row → one sample of the Polar task its repeats share (rows.py, gather.py),
  submitted through the control API, waited for, answered as ``BaseVerifyResponse`` (response.py).
- ``POST /aggregate_metrics``: the mean reward of the rollouts that have one, failures apart.
- ``GET /``: liveness (what ``ng_run`` polls for a server it started), the only open route.

Every other route needs the agent token (``Authorization: Bearer T``, or HTTP Basic with T as
user or password: NeMo Gym's clients send no header of their own, but both of them, requests and
aiohttp, turn a URL's ``user:password@`` into Basic auth, so the host is written
``polar:T@127.0.0.1``; requests ignores a user without a password).

Standard library only: ``ThreadingHTTPServer`` gives each ``/run`` a thread, and the control
client is blocking, so ``+num_samples_in_parallel`` rows run at once.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ..bounded_server import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_CONNECTIONS, BoundedHandler, BoundedHTTPServer
from ..client import ControlApiError, ControlClient, TaskFailed
from ..plugins.task_group import PluginError
from ..results import SessionResult
from ..gather import Gatherer, GroupIncomplete
from .response import failed_response, verify_response
from .rows import DEFAULT_ROW_FIELDS, RowError, repeat_key, row_identity, task_for_row

# A row is a prompt and some task fields; anything bigger is not a row.
MAX_BODY_BYTES = 64 << 20


class PolarAgent:
    """What ``/run`` does, apart from HTTP: gather the row's repeats into one task, wait for this
    repeat's session, answer with its result."""

    def __init__(
        self,
        client: ControlClient,
        template: Mapping[str, Any],
        run_id: str,
        *,
        timeout_s: float,
        poll_s: float = 0.5,
        row_fields: tuple[str, ...] = DEFAULT_ROW_FIELDS,
        gather_s: float = 2.0,
        group_size: int = 0,
        group_timeout_s: float = 600.0,
        routes: Callable[[], Any] | None = None,
    ) -> None:
        self.client = client
        # Before every group: the proxy routes to the trainer's policy only (policy.py), or the
        # /run is refused with the reason.
        self.routes = routes
        self.template = template
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.row_fields = row_fields
        self.gatherer = Gatherer(
            self._drive, run_id, gather_s=gather_s, group_size=group_size, group_timeout_s=group_timeout_s
        )

    def run(self, row: Mapping[str, Any]) -> dict[str, Any]:
        base, task = task_for_row(row, self.template, self.row_fields)
        ticket = self.gatherer.join(row_identity(row), base, task, repeat_key(row))
        model = str(task.get("agent", {}).get("model", "policy"))
        try:
            result = self.gatherer.wait(ticket, timeout_s=self.timeout_s + 60)
        except (ControlApiError, PluginError):
            # The control API refused the task, or Polar routes elsewhere than the trainer's
            # policy: the operator's to fix, answered 400/502 so the trainer stops.
            raise
        except Exception as err:  # noqa: BLE001 (whatever went wrong with the session, the row is answered)
            # No session result for this row: NeMo Gym's failure row (its failures file, the
            # collection goes on), with the group it belonged to and why.
            if isinstance(err, GroupIncomplete):
                klass, reason = "polar_group_incomplete", str(err)
            elif isinstance(err, (TaskFailed, FutureTimeout)):
                klass = "polar_task_failed"
                reason = str(err) or f"task {ticket.task_id}: no session result within {self.timeout_s + 60:g} s"
            else:
                klass, reason = "polar_agent_error", f"task {ticket.task_id}: {type(err).__name__}: {err}"
            polar = {"group_id": ticket.task_id, "sample_index": ticket.member.sample_index, "status": "FAILED"}
            return failed_response(row, model, klass, reason, polar)
        answer = verify_response(row, result, model=model)
        answer["polar"].update(
            group_id=ticket.task_id, sample_index=ticket.member.sample_index, group_size=len(ticket.group.members)
        )
        short = self.gatherer.short_reason(ticket)
        if short is not None:
            # Never handed on as a whole group: the row goes to NeMo Gym's failures, with why.
            answer["polar"]["group_short"] = short
            answer["_ng_failure_class"] = "polar_group_short"
            answer["error"] = short
        return answer

    def _drive(self, task: dict[str, Any]) -> Iterator[SessionResult]:
        if self.routes is not None:
            self.routes()
        submitted = self.client.submit(task)
        yield from self.client.stream_results(submitted["task_id"], timeout_s=self.timeout_s, poll_s=self.poll_s)


def aggregate_metrics(body: Mapping[str, Any]) -> dict[str, Any]:
    """NeMo Gym's ``AggregateMetrics``. A failed rollout's reward is a placeholder, so the mean is
    over the rollouts that have a real one and failures are counted apart."""
    rows = [r for r in body.get("verify_responses") or [] if isinstance(r, Mapping)]
    ok = [r for r in rows if r.get("_ng_failure_class") is None and r.get("reward") is not None]
    rewards = [float(r["reward"]) for r in ok]
    short = {str((r.get("polar") or {}).get("group_id")) for r in rows if (r.get("polar") or {}).get("group_short")}
    metrics = {
        "mean/reward": sum(rewards) / len(rewards) if rewards else None,
        "num_rollouts": len(rows),
        "num_rewarded": len(ok),
        "num_failed": len(rows) - len(ok),
        "num_short_groups": len(short),
    }
    return {"agent_metrics": metrics, "key_metrics": metrics, "group_level_metrics": []}


def make_server(
    agent: PolarAgent,
    host: str,
    port: int,
    name: str,
    token: str,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    idle_s: float = DEFAULT_IDLE_SECONDS,
) -> BoundedHTTPServer:
    """The agent server; it holds at most ``max_connections`` and drops a connection whose request
    has not arrived ``idle_s`` after it opened (bounded_server.py), before the token is checked."""
    if not token:
        raise ValueError("the agent token is required: every route that starts work checks it")

    class Handler(BoundedHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            self.head_read()
            if self.path == "/":
                self._send(200, {"polar": "nemo_gym agent", "name": name})
                return
            if not self._authorized():
                return
            if self.path == "/global_config_dict_yaml":
                # The credential travels in the host, so only a caller that presented it gets it back.
                me = {"host": f"polar:{token}@{host}", "port": self.server.server_port}
                config = {"head_server": me, name: {"responses_api_agents": {name: me}}}
                # NeMo Gym json.loads this body, then reads it as YAML: a JSON string of JSON is both.
                self._send(200, json.dumps(config))
            else:
                self._send(404, {"error": {"message": f"no route GET {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            self.head_read()
            if not self._authorized():
                return
            body = self._body()
            if body is None:
                return
            try:
                if self.path == "/run":
                    self._run(body)
                elif self.path == "/aggregate_metrics":
                    self._send(200, aggregate_metrics(body))
                else:
                    self._send(404, {"error": {"message": f"no route POST {self.path}"}})
            except Exception as err:  # noqa: BLE001 (every request gets an answer, whatever failed)
                # A handler thread that dies leaves NeMo Gym's client waiting for good.
                self._send(500, {"error": {"message": f"polar agent: {type(err).__name__}: {err}"}})

        def _run(self, body: dict[str, Any]) -> None:
            try:
                self._send(200, agent.run(body))
            except RowError as err:
                self._send(400, {"error": {"message": str(err)}})
            except PluginError as err:
                self._send(502, {"error": {"message": str(err)}})
            except ControlApiError as err:
                # A 400 names the TaskRequest field at fault (the row or the template is wrong); any
                # other failure (a wrong control token: 401) is the gateway's, with the reason.
                self._send(400 if err.status == 400 else 502, {"error": {"message": str(err)}})

        def _authorized(self) -> bool:
            if _presented(self.headers.get("authorization") or "", token):
                return True
            self._refuse(401, "missing or wrong agent token (Authorization: Bearer T, or the host written polar:T@HOST)")
            return False

        def _body(self) -> dict[str, Any] | None:
            # Refused before any byte is read: a missing, negative or oversized length would have
            # the server read to EOF or hold the body in memory.
            if self.headers.get("transfer-encoding"):
                self._refuse(411, "a body with Content-Length is required (no Transfer-Encoding)")
                return None
            given = self.headers.get("content-length")
            if given is None:
                self._refuse(411, "Content-Length is required")
                return None
            if not given.strip().isdigit():
                self._refuse(400, f"Content-Length {given[:40]!r} is not a non-negative integer")
                return None
            length = int(given)
            if length > MAX_BODY_BYTES:
                self._refuse(413, f"body of {length} bytes is over {MAX_BODY_BYTES}")
                return None
            try:
                doc = json.loads(self.read_body(length))
            except ValueError as err:
                self._send(400, {"error": {"message": f"body is not JSON: {err}"}})
                return None
            if not isinstance(doc, dict):
                self._send(400, {"error": {"message": "body must be a JSON object"}})
                return None
            return doc

        def _refuse(self, status: int, message: str) -> None:
            # The body (if any) was not read: the connection cannot carry another request.
            self.close_connection = True
            self._send(status, {"error": {"message": message}}, close=True)

        def _send(self, status: int, doc: Any, *, close: bool = False) -> None:
            data = json.dumps(doc).encode()
            # The reason phrase carries an error's reason: NeMo Gym's and TRL's clients print it
            # (aiohttp's ClientResponseError) and nothing prints the body. A 200 answer may carry
            # `error` too (a failed session's row, as a string): it is the row's, not the reason.
            message = error_message(doc) if status >= 400 else None
            self.send_response(status, _reason(message) if message else None)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            if close:
                self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
            sys.stderr.write(f"[polar nemo_gym] {self.address_string()} {format % args}\n")

    return BoundedHTTPServer((host, port), Handler, max_connections=max_connections, idle_s=idle_s)


def _presented(header: str, token: str) -> bool:
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return hmac.compare_digest(value.strip().encode(), token.encode())
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return hmac.compare_digest(user.encode(), token.encode()) or hmac.compare_digest(password.encode(), token.encode())
    return False


def error_message(doc: Any) -> str | None:
    """The reason an error answer gives: ``{"error": {"message"}}``, or ``{"error": "..."}``."""
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict):
        err = err.get("message")
    return err if isinstance(err, str) and err else None


def _reason(message: str) -> str:
    """One header-safe line (an HTTP reason phrase is latin-1 text without line breaks)."""
    line = " ".join(message.split())[:300]
    return line.encode("latin-1", "replace").decode("latin-1")

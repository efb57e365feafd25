"""Polar as a NeMo Gym agent server: the routes NeMo Gym's rollout collection calls.

- ``GET /global_config_dict_yaml``: the config a NeMo Gym head server serves, naming this server,
  so ``ng_collect_rollouts "+head_server={host:H,port:P}" +agent_name=NAME`` finds it without
  ``ng_run`` (collection resolves ``cfg[NAME]`` → first server → host and port).
- ``POST /run``: one row → one Polar session (rows.py), submitted through the control API, waited
  for, and answered as ``BaseVerifyResponse`` (response.py).
- ``POST /aggregate_metrics``: the mean reward, in NeMo Gym's ``AggregateMetrics`` shape.
- ``GET /``: liveness (what ``ng_run`` polls for a server it started).

Standard library only: ``ThreadingHTTPServer`` gives each ``/run`` a thread, and the control
client is blocking, so ``+num_samples_in_parallel`` rows run at once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..client import ControlApiError, ControlClient, TaskFailed
from ..results import SessionResult
from .response import verify_response
from .rows import RowError, task_for_row

# A row is a prompt and some task fields; anything bigger is not a row.
MAX_BODY_BYTES = 64 << 20


class PolarAgent:
    """What ``/run`` does, apart from HTTP: submit, wait, read the session's result."""

    def __init__(
        self, client: ControlClient, template: Mapping[str, Any], run_id: str, *, timeout_s: float, poll_s: float = 0.5
    ) -> None:
        self.client = client
        self.template = template
        self.run_id = run_id
        self.timeout_s = timeout_s
        self.poll_s = poll_s

    def run(self, row: Mapping[str, Any]) -> dict[str, Any]:
        task = task_for_row(row, self.template, self.run_id)
        submitted = self.client.submit(task)
        result = self._result(submitted["task_id"])
        return verify_response(row, result, model=str(task.get("agent", {}).get("model", "policy")))

    def _result(self, task_id: str) -> SessionResult:
        for result in self.client.stream_results(task_id, timeout_s=self.timeout_s, poll_s=self.poll_s):
            return result
        raise TaskFailed(f"task {task_id}: completed without a session result")


def aggregate_metrics(body: Mapping[str, Any]) -> dict[str, Any]:
    rows = body.get("verify_responses") or []
    rewards = [float(r["reward"]) for r in rows if isinstance(r, Mapping) and r.get("reward") is not None]
    metrics = {"mean/reward": sum(rewards) / len(rewards) if rewards else None, "num_rollouts": len(rows)}
    return {"agent_metrics": metrics, "key_metrics": metrics, "group_level_metrics": []}


def make_server(agent: PolarAgent, host: str, port: int, name: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            if self.path == "/global_config_dict_yaml":
                me = {"host": host, "port": self.server.server_port}  # type: ignore[attr-defined]
                config = {"head_server": me, name: {"responses_api_agents": {name: me}}}
                # NeMo Gym json.loads this body, then reads it as YAML: a JSON string of JSON is both.
                self._send(200, json.dumps(config))
            elif self.path == "/":
                self._send(200, {"polar": "nemo_gym agent", "name": name})
            else:
                self._send(404, {"error": {"message": f"no route GET {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            body = self._body()
            if body is None:
                return
            if self.path == "/run":
                try:
                    self._send(200, agent.run(body))
                except RowError as err:
                    self._send(400, {"error": {"message": str(err)}})
                except ControlApiError as err:
                    # A 400 names the TaskRequest field at fault (the row or the template is wrong);
                    # a 409, a task id already used for another request (a --run-id reused).
                    self._send(err.status if err.status in (400, 409) else 502, {"error": {"message": str(err)}})
                except TaskFailed as err:
                    self._send(504, {"error": {"message": str(err)}})
            elif self.path == "/aggregate_metrics":
                self._send(200, aggregate_metrics(body))
            else:
                self._send(404, {"error": {"message": f"no route POST {self.path}"}})

        def _body(self) -> dict[str, Any] | None:
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY_BYTES:
                self._send(413, {"error": {"message": f"body over {MAX_BODY_BYTES} bytes"}})
                return None
            try:
                doc = json.loads(self.rfile.read(length))
            except ValueError as err:
                self._send(400, {"error": {"message": f"body is not JSON: {err}"}})
                return None
            if not isinstance(doc, dict):
                self._send(400, {"error": {"message": "body must be a JSON object"}})
                return None
            return doc

        def _send(self, status: int, doc: Any) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
            sys.stderr.write(f"[polar nemo_gym] {self.address_string()} {format % args}\n")

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


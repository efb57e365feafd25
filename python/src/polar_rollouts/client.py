"""A client for the task control API (docs/control-api.md), standard library only.

The rollout-as-a-service loop: ``submit`` a TaskRequest, then either ``wait`` for the group
shard or ``stream_results`` to get each session's result as soon as it lands. A trainer that
starts its own engines registers them (``register_replica``, ``replace_replicas``,
``remove_replica``) and names the weights it synced (``set_policy_version``) on the same client.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .results import SessionResult, parse_result
from .shards import parse_shard_jsonl, parse_shard_parquet
from .store import Store
from .trace import Trace


class ControlApiError(RuntimeError):
    """The control API answered with an error (``{"error": {"message"}}``), or not at all."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"control API {status}: {message}")
        self.status = status
        self.message = message


class TaskFailed(RuntimeError):
    """The task was cancelled (its shard, if written, holds only what ran before), or did not
    finish in time."""


# The largest answer or download read: a shard of a big group is tens of MB; a URL that never
# ends (a misbehaving server) must not fill the trainer's memory.
MAX_READ_BYTES = 1 << 30
# No answer about the task, only about the path to it: a proxy restarting (connection refused), or
# a load balancer with no proxy behind it (502, 504), or a store that cannot say right now (503).
# Every proxy on a fleet's store answers the same, so a poll that meets one asks again.
TRANSIENT = frozenset({0, 502, 503, 504})


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to http(s) only (urllib would also follow one to ftp://)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if not _is_http(newurl):
            raise ControlApiError(code, f"refused a redirect to {newurl!r}: only http(s) URLs are read")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


# No file:// or ftp:// handler: a URL the control server hands out is fetched over HTTP or not at all.
_OPENER = urllib.request.OpenerDirector()
for _handler in (
    urllib.request.ProxyHandler(),
    urllib.request.HTTPHandler(),
    urllib.request.HTTPSHandler(),
    urllib.request.HTTPDefaultErrorHandler(),
    _HttpOnlyRedirects(),
    urllib.request.HTTPErrorProcessor(),
):
    _OPENER.add_handler(_handler)


class ControlClient:
    """``ControlClient("http://proxy:8787", control_token)``.

    ``control_token`` is the control API's bearer token: the proxy's ``--control-token`` /
    ``$POLAR_CONTROL_TOKEN`` (what ``polar serve`` prints), or its admin token on a proxy
    configured without one (``admin_token=`` is the same parameter under its old name). Results and shards are downloaded through the presigned URLs the API
    hands out (http(s) only, at most ``max_read_bytes`` each); with a store that cannot presign
    (a directory store, an R2 binding) pass ``store`` so the keys it lists are read from the
    store directly.
    """

    def __init__(
        self,
        base_url: str,
        control_token: str | None = None,
        *,
        admin_token: str | None = None,
        store: Store | None = None,
        timeout_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        max_read_bytes: int = MAX_READ_BYTES,
    ) -> None:
        if not _is_http(base_url):
            raise ValueError(f"base_url must be http(s), got {base_url!r}")
        self.max_read_bytes = max_read_bytes
        self.base_url = base_url.rstrip("/")
        token = control_token if control_token is not None else admin_token
        if not token:
            raise ValueError("control_token is required (polar serve prints it; or $POLAR_CONTROL_TOKEN)")
        self.control_token = token
        self.store = store
        self.timeout_s = timeout_s
        self._sleep = sleep

    # -- tasks ------------------------------------------------------------------------------

    def submit(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """POST /v1/tasks: ``{task_id, session_ids, enqueued, skipped, submitted_at, status_url}``.
        Resubmitting the same request only enqueues the sessions that have no result yet."""
        return self._call("POST", "/v1/tasks", task)

    def status(self, task_id: str) -> dict[str, Any]:
        """GET /v1/tasks/{id}: ``{state, num_samples, counts, cancelled, shard_key, ...}``."""
        return self._call("GET", f"/v1/tasks/{_quote(task_id)}")

    def cancel(self, task_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/tasks/{_quote(task_id)}")

    def trajectories(self, task_id: str) -> dict[str, Any]:
        """GET /v1/tasks/{id}/trajectories: the shard and result keys, with URLs on S3."""
        return self._call("GET", f"/v1/tasks/{_quote(task_id)}/trajectories")

    # -- engines and versions the trainer owns (docs/control-api.md) -------------------------

    def replicas(self) -> list[dict[str, Any]]:
        """GET /v1/replicas: ``[{url, index, origin, healthy, in_flight}, ...]``, the engine
        replicas the proxy routes model calls to."""
        return list(self._call("GET", "/v1/replicas")["replicas"])

    def register_replica(self, url: str, *, wait_s: float = 0.0, poll_s: float = 1.0) -> dict[str, Any]:
        """POST /v1/replicas: the proxy routes to ``url`` (an engine's base URL) from the next call
        on, once it passes the proxy's health probe: ``GET /health`` answers 2xx, or, for a server
        with no such route (404; NeMo RL's vLLM server), ``POST /tokenize`` answers token ids. One
        that fails it raises ControlApiError 422 naming it. Registering one already in the set
        changes nothing. Answers ``{replicas, added, removed}``. ``wait_s``: keep asking that long
        while the engine is still loading (422)."""
        return self._until_reachable("POST", {"url": url}, wait_s, poll_s)

    def replace_replicas(
        self, urls: Sequence[str], *, wait_s: float = 0.0, poll_s: float = 1.0
    ) -> dict[str, Any]:
        """PUT /v1/replicas: the set becomes exactly ``urls`` (all or nothing: every new one must
        pass the health probe, as for ``register_replica``); replicas kept keep their sessions.
        ``{replicas, added, removed}``. ``wait_s`` as for ``register_replica``."""
        if isinstance(urls, str):
            raise TypeError("replace_replicas takes a list of URLs, not one URL")
        return self._until_reachable("PUT", {"urls": list(urls)}, wait_s, poll_s)

    def remove_replica(self, url: str) -> dict[str, Any]:
        """DELETE /v1/replicas: no new call goes to ``url`` (calls already there finish). The last
        replica cannot be removed (409): use ``replace_replicas``."""
        return self._call("DELETE", "/v1/replicas", {"url": url})

    def set_policy_version(self, version: int) -> None:
        """PUT /v1/policy-version: the version captures record for engines that report none of
        their own (an engine's ``/weight_info`` wins where it answers). A version lower than the
        current one raises ControlApiError 409."""
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"version must be a non-negative int (the training step), got {version!r}")
        self._call("PUT", "/v1/policy-version", {"version": version})

    def policy_version(self) -> dict[str, Any]:
        """GET /v1/policy-version: ``{version, set_by}`` (``set_by`` is ``trainer`` or ``proxy``)."""
        return self._call("GET", "/v1/policy-version")

    # -- the loop a trainer runs --------------------------------------------------------------

    def wait(self, task_id: str, *, timeout_s: float = 600.0, poll_s: float = 1.0) -> dict[str, Any]:
        """Polls status until ``completed``; raises TaskFailed if cancelled or out of time. A poll
        that finds no proxy (a restart) or a 502/503/504 asks again until ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = self._polled(lambda: self.status(task_id), deadline, poll_s)
            _raise_if_cancelled(task_id, status)
            if status["state"] == "completed":
                return status
            if time.monotonic() >= deadline:
                raise TaskFailed(f"task {task_id} not completed after {timeout_s}s: {status['counts']}")
            self._sleep(poll_s)

    def stream_results(
        self, task_id: str, *, timeout_s: float = 600.0, poll_s: float = 1.0
    ) -> Iterator[SessionResult]:
        """Yields each session's result once, as soon as it is listed, until the group is complete."""
        seen: set[str] = set()
        deadline = time.monotonic() + timeout_s
        while True:
            listing = self._polled(lambda: self.trajectories(task_id), deadline, poll_s)
            missing = 0
            for entry in listing["results"]:
                if entry["session_id"] in seen:
                    continue
                data = self._download(entry["key"], entry.get("url"))
                if data is None:
                    # Listed but not readable yet (or rewritten by a rerun): taken on the next poll,
                    # and the stream does not end while a listed result is still missing.
                    missing += 1
                    continue
                seen.add(entry["session_id"])
                yield parse_result(data)
            # A cancelled group also completes (its sessions end as ERROR): that is no finished group.
            _raise_if_cancelled(task_id, self._polled(lambda: self.status(task_id), deadline, poll_s))
            if listing["complete"] and missing == 0:
                return
            if time.monotonic() >= deadline:
                raise TaskFailed(f"task {task_id}: {len(seen)} results after {timeout_s}s, group not complete")
            self._sleep(poll_s)

    def shard(self, task_id: str) -> list[Trace]:
        """The complete group shard's traces (Parquet, or the JSONL twin for a task with no trace)."""
        listing = self._polled(lambda: self.trajectories(task_id), time.monotonic() + self.timeout_s, 0.5)
        if not listing["complete"]:
            raise TaskFailed(f"task {task_id}: the group shard is not written yet")
        shard = listing.get("shard")
        if shard is not None:
            data = self._download(shard["key"], shard.get("url"))
            if data is not None:
                return parse_shard_parquet(data)
        twin = listing.get("shard_jsonl")
        if twin is not None:
            data = self._download(twin["key"], twin.get("url"))
            if data is not None:
                return parse_shard_jsonl(data)
        raise TaskFailed(f"task {task_id}: the shard is listed but could not be read")

    def run(self, task: Mapping[str, Any], *, timeout_s: float = 600.0, poll_s: float = 1.0) -> list[Trace]:
        """Submit, wait, and return the group's traces."""
        submitted = self.submit(task)
        self.wait(submitted["task_id"], timeout_s=timeout_s, poll_s=poll_s)
        return self.shard(submitted["task_id"])

    # -- plumbing -----------------------------------------------------------------------------

    def _polled(self, read: Callable[[], dict[str, Any]], deadline: float, poll_s: float) -> dict[str, Any]:
        """``read()``, asked again after a transient error (``TRANSIENT``) until ``deadline``: a poll
        loop must not end a training run because one proxy of the fleet restarted."""
        while True:
            try:
                return read()
            except ControlApiError as err:
                if err.status not in TRANSIENT or time.monotonic() >= deadline:
                    raise
            self._sleep(poll_s)

    def _until_reachable(
        self, method: str, body: Mapping[str, Any], wait_s: float, poll_s: float
    ) -> dict[str, Any]:
        """An engine the trainer just launched passes the health probe only once it serves:
        a 422 (unreachable) is asked again until ``wait_s`` has passed; other errors raise at once."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return self._call(method, "/v1/replicas", body)
            except ControlApiError as err:
                if err.status != 422 or time.monotonic() >= deadline:
                    raise
            self._sleep(poll_s)

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("authorization", f"Bearer {self.control_token}")
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with _OPENER.open(request, timeout=self.timeout_s) as answer:
                doc = json.loads(self._read(answer, f"{method} {path}"))
        except urllib.error.HTTPError as err:
            raise ControlApiError(err.code, _error_message(err.read())) from None
        except urllib.error.URLError as err:
            raise ControlApiError(0, f"{method} {path}: {err.reason}") from None
        except (ConnectionError, http.client.HTTPException) as err:
            # A proxy that closed the connection without an answer (stopping, restarting).
            raise ControlApiError(0, f"{method} {path}: {err!r}") from None
        if not isinstance(doc, dict):
            raise ControlApiError(200, f"{method} {path}: answer is not a JSON object")
        return doc

    def _read(self, answer: Any, what: str) -> bytes:
        body: bytes = answer.read(self.max_read_bytes + 1)
        if len(body) > self.max_read_bytes:
            raise ControlApiError(200, f"{what}: the answer is over {self.max_read_bytes} bytes; not read")
        return body

    def _download(self, key: str, url: str | None) -> bytes | None:
        if url is not None:
            # The URL comes from the server: never let it name a local file (file://) or another scheme.
            if not _is_http(url):
                raise ControlApiError(200, f"download of {key}: refused {url!r}, only http(s) URLs are read")
            try:
                with _OPENER.open(url, timeout=self.timeout_s) as answer:
                    return self._read(answer, f"download of {key}")
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    return None
                raise ControlApiError(err.code, f"download of {key} failed") from None
            except urllib.error.URLError as err:
                raise ControlApiError(0, f"download of {key}: {err.reason}") from None
        if self.store is None:
            raise ControlApiError(
                200, f"{key} has no download URL (the proxy's store cannot presign): pass store= to read it"
            )
        return self.store.get(key)


def _is_http(url: str) -> bool:
    return urllib.parse.urlsplit(url).scheme.lower() in ("http", "https")


def _raise_if_cancelled(task_id: str, status: Mapping[str, Any]) -> None:
    # `cancelled` too: a server from before `cancelled` was a state of its own said `completed`.
    if status.get("state") == "cancelled" or status.get("cancelled") is True:
        raise TaskFailed(f"task {task_id} was cancelled: {status.get('counts')}")


def _quote(task_id: str) -> str:
    return urllib.parse.quote(task_id, safe="")


def _error_message(body: bytes) -> str:
    try:
        doc = json.loads(body)
        return str(doc["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")

"""The control-API client against the real Node stack: `polar proxy --jobs-queue` on s3rver and
local-aws-sqs, a runner consuming the queue (the stack of test/integration/control-api-e2e.test.ts)."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, node

from polar_rollouts import ControlApiError, ControlClient, TaskFailed, filter_traces, grpo_advantages


def example_task(task_id: str, as_id: str) -> dict[str, Any]:
    for line in (ROOT / "examples" / "tasks.jsonl").read_text().splitlines():
        task = json.loads(line)
        if task["task_id"] == task_id:
            return {**task, "task_id": as_id}
    raise AssertionError(task_id)


def test_submit_stream_and_read_the_group(control_stack: dict[str, Any]) -> None:
    client = ControlClient(control_stack["proxy_url"], control_stack["admin_token"])
    submitted = client.submit(example_task("hello-file", "py-hello"))
    assert submitted["task_id"] == "py-hello"
    assert submitted["session_ids"] == ["py-hello-0", "py-hello-1"]
    streamed = list(client.stream_results("py-hello", timeout_s=120, poll_s=0.2))
    assert sorted(r.session_id for r in streamed) == ["py-hello-0", "py-hello-1"]
    assert all(r.status == "COMPLETED" and r.traces for r in streamed)
    status = client.wait("py-hello", timeout_s=60, poll_s=0.2)
    assert status["state"] == "completed" and status["counts"]["COMPLETED"] == 2
    traces = client.shard("py-hello")
    assert {t.session_id for t in traces} == {"py-hello-0", "py-hello-1"}
    # The shard holds the same traces the streamed results did.
    by_key = {(t.session_id, t.trace_index): t for r in streamed for t in r.traces}
    for t in traces:
        assert t.input_ids.tolist() == by_key[(t.session_id, t.trace_index)].input_ids.tolist()
    kept = filter_traces(traces)
    assert len(grpo_advantages(kept)) == len(kept) == len(traces)
    # Resubmitting the same request enqueues nothing: every session has a result.
    again = client.submit(example_task("hello-file", "py-hello"))
    assert again["enqueued"] == 0


def test_errors_come_back_with_the_api_message(control_stack: dict[str, Any]) -> None:
    wrong = ControlClient(control_stack["proxy_url"], "not-the-token")
    with pytest.raises(ControlApiError) as err:
        wrong.status("py-hello")
    assert err.value.status == 401
    client = ControlClient(control_stack["proxy_url"], control_stack["admin_token"])
    with pytest.raises(ControlApiError) as err:
        client.submit({"task_id": "bad", "num_samples": -1})
    assert err.value.status == 400 and "num_samples" in err.value.message
    with pytest.raises(ControlApiError) as err:
        client.status("never-submitted")
    assert err.value.status == 404


def test_stream_reads_from_the_store_when_the_api_has_no_urls(
    control_stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class NoUrls(ControlClient):
        def trajectories(self, task_id: str) -> dict[str, Any]:
            listing = super().trajectories(task_id)
            for entry in listing["results"]:
                entry["url"] = None
            return listing

    for name, value in control_stack["env"].items():
        monkeypatch.setenv(name, value)
    from polar_rollouts import S3Store

    store = S3Store(control_stack["bucket"], control_stack["prefix"])
    client = NoUrls(control_stack["proxy_url"], control_stack["admin_token"], store=store)
    client.submit(example_task("per-request-builder", "py-per-request"))
    streamed = list(client.stream_results("py-per-request", timeout_s=120, poll_s=0.2))
    assert [r.session_id for r in streamed] == ["py-per-request-0"]
    assert len(streamed[0].traces) == 2
    no_store = NoUrls(control_stack["proxy_url"], control_stack["admin_token"])
    with pytest.raises(ControlApiError, match="pass store="):
        list(no_store.stream_results("py-per-request", timeout_s=5, poll_s=0.2))


def test_a_cancelled_task_ends_the_wait(control_stack: dict[str, Any]) -> None:
    client = ControlClient(control_stack["proxy_url"], control_stack["admin_token"])
    slow = {
        "task_id": "py-cancel",
        "num_samples": 1,
        "timeout_seconds": 120,
        "instruction": "wait",
        "agent": {"harness": "shell", "settings": {"command": "sleep 60"}},
    }
    client.submit(slow)
    assert client.cancel("py-cancel")["cancelled"] is True
    # The runner then ends the session and may write its (failed) shard at any moment, turning the
    # state to `completed`; the states wait() reacts to are replayed here so the check cannot race.
    states = iter(["queued", "running", "cancelled"])
    naps: list[float] = []

    class Replayed(ControlClient):
        def status(self, task_id: str) -> dict[str, Any]:
            real = super().status(task_id)
            return {**real, "state": next(states), "cancelled": False}

    replayed = Replayed(control_stack["proxy_url"], control_stack["admin_token"], sleep=naps.append)
    with pytest.raises(TaskFailed, match="py-cancel was cancelled"):
        replayed.wait("py-cancel", timeout_s=60, poll_s=0.5)
    assert naps == [0.5, 0.5]


def test_stream_waits_for_a_listed_result_it_could_not_read_yet(polar_run_store: Path) -> None:
    """An S3-compatible store can list a key a moment before it serves it: the stream must not end
    on a complete listing while one of its results is still unread."""
    keys = [f"results/hello-file/hello-file-{i}.json" for i in (0, 1)]
    reads: list[str] = []

    class Flaky(ControlClient):
        def trajectories(self, task_id: str) -> dict[str, Any]:
            results = [{"session_id": k.split("/")[-1][:-5], "key": k, "url": None} for k in keys]
            return {"complete": True, "results": results}

        def status(self, task_id: str) -> dict[str, Any]:
            return {"state": "completed", "counts": {}}

        def _download(self, key: str, url: str | None) -> bytes | None:
            reads.append(key)
            if key == keys[1] and reads.count(key) == 1:
                return None
            return (polar_run_store / key).read_bytes()

    client = Flaky("http://127.0.0.1:9", "token", sleep=lambda _s: None)
    streamed = [r.session_id for r in client.stream_results("hello-file", timeout_s=10)]
    assert streamed == ["hello-file-0", "hello-file-1"]
    assert reads == [keys[0], keys[1], keys[1]]


def test_wait_raises_for_a_cancelled_task_after_its_shard_is_written(control_stack: dict[str, Any]) -> None:
    """No replayed states: the runner really ends the cancelled session and writes the group's shard."""
    client = ControlClient(control_stack["proxy_url"], control_stack["admin_token"])
    client.submit(
        {
            "task_id": "py-cancel-real",
            "num_samples": 1,
            "timeout_seconds": 120,
            "instruction": "wait",
            "agent": {"harness": "shell", "settings": {"command": "sleep 60"}},
        }
    )
    client.cancel("py-cancel-real")
    deadline = time.monotonic() + 90
    while client.status("py-cancel-real")["shard_jsonl_key"] is None:
        assert time.monotonic() < deadline, client.status("py-cancel-real")
        time.sleep(0.2)
    status = client.status("py-cancel-real")
    assert status["state"] == "cancelled" and status["counts"]["ERROR"] == 1, status
    with pytest.raises(TaskFailed, match="py-cancel-real was cancelled"):
        client.wait("py-cancel-real", timeout_s=10, poll_s=0.2)
    with pytest.raises(TaskFailed, match="py-cancel-real was cancelled"):
        list(client.stream_results("py-cancel-real", timeout_s=10, poll_s=0.2))
    with pytest.raises(ControlApiError) as err:
        client.cancel("py-hello-done-never")
    assert err.value.status == 404


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers as a control server that hands out the URLs a test chose."""

    listing: dict[str, Any] = {}

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if self.path == "/huge":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"x" * 4096)
            return
        if self.path == "/to-file":
            self.send_response(302)
            self.send_header("location", "file:///etc/hostname")
            self.end_headers()
            return
        body = json.dumps(self.listing).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def fake_control() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"listing": {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _listing(url: str) -> dict[str, Any]:
    return {"complete": True, "results": [], "shard": {"key": "trajectories/t.parquet", "url": url}, "shard_jsonl": None}


def test_a_file_url_from_the_server_is_refused(fake_control: tuple[str, type[_Handler]], tmp_path: Path) -> None:
    secret = tmp_path / "secret.parquet"
    secret.write_bytes(b"PAR1 not for the server to choose")
    base, handler = fake_control
    handler.listing = _listing(secret.as_uri())
    client = ControlClient(base, "t")
    with pytest.raises(ControlApiError, match="only http"):
        client.shard("t")
    # A redirect to a file is refused too (by urllib for file://; the opener has no file handler anyway).
    handler.listing = _listing(f"{base}/to-file")
    with pytest.raises(ControlApiError, match="only http|302"):
        client.shard("t")


def test_an_oversized_answer_is_not_read(fake_control: tuple[str, type[_Handler]]) -> None:
    base, handler = fake_control
    handler.listing = _listing(f"{base}/huge")
    with pytest.raises(ControlApiError, match="over 1024 bytes"):
        ControlClient(base, "t", max_read_bytes=1024).shard("t")
    with pytest.raises(ControlApiError, match="over 64 bytes"):
        ControlClient(base, "t", max_read_bytes=64).status("t")


def test_the_token_is_the_control_token_under_either_name() -> None:
    assert ControlClient("http://127.0.0.1:9", "a").control_token == "a"
    assert ControlClient("http://127.0.0.1:9", control_token="b").control_token == "b"
    assert ControlClient("http://127.0.0.1:9", admin_token="c").control_token == "c"
    with pytest.raises(ValueError, match="control_token is required"):
        ControlClient("http://127.0.0.1:9")


# -- engines and versions the trainer owns, against a real `polar serve` ----------------------


def _node_child(
    args: list[str], pattern: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], re.Match[str]]:
    process = subprocess.Popen(
        [node(), str(ROOT / "bin" / "polar.js"), *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    seen = ""
    for line in process.stdout:
        seen += line
        found = re.search(pattern, line)
        if found:
            # Keep draining its output so the child never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in process.stdout or []], daemon=True).start()
            return process, found
    process.wait()
    raise RuntimeError(f"polar {args[0]} did not start:\n{seen}")


@pytest.fixture(scope="module")
def trainer_engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`polar serve` (its own dry-run policy as the configured replica) and two more dry-run
    policies standing in for the engines a trainer starts at runtime."""
    out = tmp_path_factory.mktemp("polar-serve-replicas")
    children = []
    try:
        serve, found = _node_child(
            ["serve", "--port", "0", "--out", str(out)],
            r"--proxy (http://127\.0\.0\.1:\d+) --control-token ([0-9a-f]+)",
            env={**os.environ, "POLAR_CONTROL_TOKEN": ""},
        )
        children.append(serve)
        engines = []
        for _ in range(2):
            policy, listening = _node_child(["policy", "--port", "0"], r"listening on (http://127\.0\.0\.1:\d+)")
            children.append(policy)
            engines.append(listening.group(1))
        yield {"proxy_url": found.group(1), "token": found.group(2), "store": out / "store", "engines": engines}
    finally:
        for child in children:
            child.terminate()
            child.wait(timeout=30)


def _captures(store: Path, task_id: str) -> list[dict[str, Any]]:
    paths = sorted((store / "captures" / task_id).glob("*/*.json.gz"))
    assert paths, f"no captures for {task_id}"
    return [json.loads(gzip.decompress(p.read_bytes())) for p in paths]


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_trainer_registers_replaces_and_removes_its_engines(trainer_engines: dict[str, Any]) -> None:
    client = ControlClient(trainer_engines["proxy_url"], trainer_engines["token"])
    store = trainer_engines["store"]
    b, c = trainer_engines["engines"]
    [own] = client.replicas()
    assert own["origin"] == "configured" and own["healthy"] is True

    dead = _closed_port_url()
    with pytest.raises(ControlApiError) as err:
        client.register_replica(dead)
    assert err.value.status == 422 and f"replica {dead} is not reachable" in err.value.message
    assert [r["url"] for r in client.replicas()] == [own["url"]]

    assert client.register_replica(b)["added"] == [b]
    assert [(r["url"], r["origin"]) for r in client.replicas()] == [(own["url"], "configured"), (b, "registered")]
    assert client.replace_replicas([b])["removed"] == [own["url"]]
    client.run(example_task("hello-file", "py-replica-b"), timeout_s=120, poll_s=0.2)
    assert {x["replica"] for x in _captures(store, "py-replica-b")} == {b}

    # The last replica stays (the proxy would have no engine); swap it for another instead.
    with pytest.raises(ControlApiError) as err:
        client.remove_replica(b)
    assert err.value.status == 409 and f"{b} is the only replica" in err.value.message
    client.register_replica(c)
    assert client.remove_replica(b)["removed"] == [b]
    client.run(example_task("hello-file", "py-replica-c"), timeout_s=120, poll_s=0.2)
    assert {x["replica"] for x in _captures(store, "py-replica-c")} == {c}


def test_the_trainer_names_the_policy_version_captures_record(trainer_engines: dict[str, Any]) -> None:
    client = ControlClient(trainer_engines["proxy_url"], trainer_engines["token"])
    assert client.set_policy_version(5) is None
    assert client.policy_version() == {"version": "5", "set_by": "trainer"}
    with pytest.raises(ControlApiError) as err:
        client.set_policy_version(4)
    assert err.value.status == 409 and "policy version 4 is lower than the current 5" in err.value.message
    client.run(example_task("hello-file", "py-version"), timeout_s=120, poll_s=0.2)
    captures = _captures(trainer_engines["store"], "py-version")
    # The dry-run policy reports no version of its own, so the trainer's is the one recorded.
    assert {(x["policy_version"], x["policy_version_end"], x["policy_version_source"]) for x in captures} == {
        ("5", "5", "trainer")
    }
    traces = client.shard("py-version")
    assert traces and {t.policy_version for t in traces} == {"5"}


def test_the_client_checks_replica_and_version_arguments() -> None:
    client = ControlClient("http://127.0.0.1:9", "t")
    for bad in (-1, True, 2.0, "3"):
        with pytest.raises(ValueError, match="non-negative int"):
            client.set_policy_version(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of URLs"):
        client.replace_replicas("http://127.0.0.1:8000")


class _LoadingEngine(http.server.BaseHTTPRequestHandler):
    """An engine still loading its weights: ``GET /health`` answers 503 until ``ready`` is set."""

    ready = threading.Event()
    probes = 0

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        type(self).probes += 1
        self.send_response(200 if self.ready.is_set() else 503)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_register_replica_waits_for_an_engine_still_loading(trainer_engines: dict[str, Any]) -> None:
    handler = type("Engine", (_LoadingEngine,), {"ready": threading.Event(), "probes": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 2:
            handler.ready.set()  # the weights finished loading while the trainer waited

    client = ControlClient(trainer_engines["proxy_url"], trainer_engines["token"], sleep=nap)
    try:
        with pytest.raises(ControlApiError) as err:
            client.register_replica(url)  # no wait: refused at once
        # Only "not reachable": what the probe got back stays in the proxy's log (issue 49).
        assert err.value.status == 422 and "not reachable" in err.value.message
        assert "503" not in err.value.message
        assert client.register_replica(url, wait_s=60, poll_s=0.1)["added"] == [url]
        assert naps == [0.1, 0.1]
        # Other refusals are not waited on.
        with pytest.raises(ControlApiError) as err:
            client.register_replica("ftp://127.0.0.1:1", wait_s=60)
        assert err.value.status == 400 and len(naps) == 2
    finally:
        client.remove_replica(url)
        server.shutdown()
        server.server_close()


def test_polls_ask_again_while_the_proxy_restarts() -> None:
    """A fleet's proxy restarting under a trainer's wait (connection refused, a connection closed
    with no answer, a 503) is no answer about the task: the poll goes on until its deadline. Before,
    the first refused connection ended the training run, and a closed one raised http.client's
    RemoteDisconnected out of the client (python/tests/test_trl_fleet.py's restart)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    polls: list[str] = []

    class Restarted(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            polls.append(self.path)
            if len(polls) == 1:
                return  # closed with no answer, as a proxy that is stopping does
            status, body = (503, {"error": {"message": "store"}}) if len(polls) == 2 else (200, {"state": "completed", "counts": {}})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    naps: list[float] = []

    def nap(s: float) -> None:
        naps.append(s)
        if len(naps) == 3:  # the proxy is back on its port after three refused polls
            server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Restarted)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers.append(server)

    servers: list[http.server.ThreadingHTTPServer] = []
    client = ControlClient(f"http://127.0.0.1:{port}", "t", sleep=nap)
    try:
        assert client.wait("restart", timeout_s=30, poll_s=0.01)["state"] == "completed"
        assert len(naps) == 5 and polls == ["/v1/tasks/restart"] * 3
        # Out of time, the last error is raised; other errors are not asked again.
        with pytest.raises(ControlApiError) as err:
            ControlClient("http://127.0.0.1:9", "t", sleep=lambda _s: None).wait("gone", timeout_s=0.2)
        assert err.value.status == 0
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()

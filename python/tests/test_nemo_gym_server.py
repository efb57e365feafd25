"""The NeMo Gym agent server's HTTP edge (credential, body length, reasons) and how repeats of a
row gather into one Polar task. The real collection runs in test/integration/nemo-gym.test.ts."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from polar_rollouts import SessionResult
from polar_rollouts.client import ControlClient
from polar_rollouts.nemo_gym import PolarAgent, make_server
from polar_rollouts.gather import Gatherer, GroupIncomplete

TOKEN = "agent-secret"
TEMPLATE = {"agent": {"harness": "shell"}, "evaluator": {"strategy": "test_on_output", "config": {"command": "false"}}}
ROW = {"responses_create_params": {"input": "Write hello.txt"}, "_ng_task_index": 0, "_ng_rollout_index": 0}


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    # Port 9 answers nothing: any test reaching the control API would fail loudly.
    agent = PolarAgent(ControlClient("http://127.0.0.1:9", "control"), TEMPLATE, "r", timeout_s=5)
    srv = make_server(agent, "127.0.0.1", 0, "polar_agent", TOKEN)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "127.0.0.1", int(srv.server_address[1])
    srv.shutdown()
    srv.server_close()


def raw(addr: tuple[str, int], head: str, body: bytes = b"", *, keep_sending: int = 0) -> tuple[str, int]:
    """Sends a request, then up to ``keep_sending`` more body bytes while the server lets it;
    returns (the status line, the body bytes the server took)."""
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(head.encode() + b"\r\n" + body)
        sent = len(body)
        chunk = b"x" * (1 << 20)
        try:
            while sent < keep_sending:
                s.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # the server closed the connection: what a refused body must do
        answer = s.recv(65536).decode("latin-1")
    return answer.split("\r\n", 1)[0], sent


def headers(path: str, *extra: str, auth: str = f"Bearer {TOKEN}") -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: x", f"Authorization: {auth}", *extra]
    return "".join(f"{line}\r\n" for line in lines)


def test_a_negative_content_length_is_refused_before_the_body_is_read(server: tuple[str, int]) -> None:
    # Issue 41 item 8: Content-Length -1 with a 200 MB body was read to EOF (memory 66 -> 470 MiB).
    started = time.monotonic()
    status, sent = raw(server, headers("/run", "Content-Length: -1"), b"{", keep_sending=200 << 20)
    assert status.startswith("HTTP/1.1 400"), status
    assert "not a non-negative integer" in status
    assert sent < 64 << 20, f"the server kept reading: {sent} bytes went in"
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("extra", "code"),
    [((), "411"), (("Content-Length: 99999999999",), "413"), (("Transfer-Encoding: chunked",), "411")],
)
def test_a_missing_or_oversized_length_is_refused(server: tuple[str, int], extra: tuple[str, ...], code: str) -> None:
    status, _ = raw(server, headers("/run", *extra))
    assert status.startswith(f"HTTP/1.1 {code}"), status


def test_run_and_the_config_need_the_agent_token(server: tuple[str, int]) -> None:
    body = json.dumps(ROW).encode()
    for auth in ("Bearer wrong", "", f"Basic {base64.b64encode(b'x:wrong').decode()}"):
        status, _ = raw(server, headers("/run", f"Content-Length: {len(body)}", auth=auth), body)
        assert status.startswith("HTTP/1.1 401"), status
    status, _ = raw(server, "GET /global_config_dict_yaml HTTP/1.1\r\nHost: x\r\n")
    assert status.startswith("HTTP/1.1 401"), status
    status, _ = raw(server, "GET / HTTP/1.1\r\nHost: x\r\n")  # liveness stays open (ng_run polls it)
    assert status.startswith("HTTP/1.1 200"), status


def test_the_token_as_a_urls_user_is_accepted_as_nemo_gyms_clients_send_it(server: tuple[str, int]) -> None:
    # requests and aiohttp turn http://TOKEN@host/ into Basic TOKEN: (empty password).
    basic = base64.b64encode(f"{TOKEN}:".encode()).decode()
    status, _ = raw(server, f"GET /global_config_dict_yaml HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {basic}\r\n")
    assert status.startswith("HTTP/1.1 200"), status


def test_the_row_that_replaced_the_evaluator_is_refused_with_the_field_in_the_reason(server: tuple[str, int]) -> None:
    hostile = {**ROW, "polar_task": {"evaluator": {"strategy": "test_on_output", "config": {"command": "true"}}}}
    body = json.dumps(hostile).encode()
    status, _ = raw(server, headers("/run", f"Content-Length: {len(body)}"), body)
    # The reason phrase is what aiohttp's ClientResponseError (NeMo Gym, TRL) prints.
    assert status.startswith("HTTP/1.1 400 polar_task.evaluator: a row may not set this field"), status


def test_a_control_api_failure_reaches_the_client_with_its_reason(server: tuple[str, int]) -> None:
    body = json.dumps(ROW).encode()
    status, _ = raw(server, headers("/run", f"Content-Length: {len(body)}"), body)
    assert status.startswith("HTTP/1.1 502 control API 0: POST /v1/tasks:"), status


# -- gathering ------------------------------------------------------------------------------


def fake_result(task_id: str, i: int, reward: float) -> SessionResult:
    return SessionResult(task_id, f"{task_id}-{i}", i, 0, "COMPLETED", reward, None, [])


class Engine:
    """Stands in for the control API: records each task, answers sample i with reward 1/(i+1)."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.release = threading.Event()

    def drive(self, task: dict[str, Any]) -> Iterator[SessionResult]:
        self.tasks.append(task)
        self.release.wait(10)
        for i in range(task["num_samples"]):
            yield fake_result(task["task_id"], i, 1 / (i + 1))


def run_all(g: Gatherer, calls: list[tuple[str, Any]]) -> list[tuple[str, int, int, SessionResult]]:
    out: list[Any] = [None] * len(calls)

    def one(k: int, identity: str, repeat: Any) -> None:
        out[k] = g.run(identity, "t0", {"instruction": "x"}, repeat, timeout_s=10)

    threads = [threading.Thread(target=one, args=(k, *c)) for k, c in enumerate(calls)]
    for t in threads:
        t.start()
        time.sleep(0.02)
    for t in threads:
        t.join()
    return out


def test_repeats_of_a_row_become_one_task_and_a_resend_waits_for_the_same_session() -> None:
    engine = Engine()
    g = Gatherer(engine.drive, "run", gather_s=0.3)
    threading.Timer(0.5, engine.release.set).start()
    # Rollouts 0 and 1 of a row, rollout 0 re-sent while it waits, and another row.
    out = run_all(g, [("a", 0), ("a", 1), ("a", 0), ("b", 0)])
    assert sorted((t["task_id"], t["num_samples"]) for t in engine.tasks) == [("run.t0.g0", 2), ("run.t0.g1", 1)]
    (ta, ia, na, ra), (tb, ib, _, rb), (tc, ic, _, rc), _ = out
    assert (ta, ia, na, ra.reward) == ("run.t0.g0", 0, 2, 1.0)
    assert (tb, ib, rb.reward) == ("run.t0.g0", 1, 0.5)
    assert (tc, ic, rc.session_id) == (ta, 0, ra.session_id)  # the re-send: same session


def test_a_row_seen_again_after_its_answer_is_a_new_sample_of_a_new_group() -> None:
    engine = Engine()
    engine.release.set()
    g = Gatherer(engine.drive, "run", gather_s=0.1)
    first = g.run("a", "t0", {"instruction": "x"}, ("_rowidx", 0), timeout_s=10)
    again = g.run("a", "t0", {"instruction": "x"}, ("_rowidx", 0), timeout_s=10)
    assert (first[0], again[0]) == ("run.t0.g0", "run.t0.g1")


def test_a_group_of_the_operators_size_is_submitted_without_waiting() -> None:
    engine = Engine()
    engine.release.set()
    g = Gatherer(engine.drive, "run", gather_s=30, group_size=2)
    started = time.monotonic()
    out = run_all(g, [("a", 0), ("a", 1)])
    assert time.monotonic() - started < 5
    assert [o[2] for o in out] == [2, 2] and len(engine.tasks) == 1


def test_a_failed_group_ends_every_members_run_with_the_reason() -> None:
    def drive(task: dict[str, Any]) -> Iterator[SessionResult]:
        raise RuntimeError("control API 401: missing or wrong control token")
        yield  # pragma: no cover

    g = Gatherer(drive, "run", gather_s=0.1)
    with pytest.raises(RuntimeError, match="control API 401"):
        g.run("a", "t0", {"instruction": "x"}, None, timeout_s=10)


def test_repeats_slower_than_the_window_still_make_one_group_when_the_size_is_known() -> None:
    # Issue 48 item 9: on a loaded machine NeMo Gym's second repeat came after the 2 s window
    # and each row became two one-sample groups, though --group-size was given.
    engine = Engine()
    engine.release.set()
    g = Gatherer(engine.drive, "run", gather_s=0.1, group_size=2, group_timeout_s=10)
    out: list[Any] = [None, None]

    def one(k: int) -> None:
        out[k] = g.run("a", "t0", {"instruction": "x"}, ("_ng_rollout_index", k), timeout_s=10)

    first = threading.Thread(target=one, args=(0,))
    first.start()
    time.sleep(0.6)  # six windows later
    one(1)
    first.join()
    assert [(t["task_id"], t["num_samples"]) for t in engine.tasks] == [("run.t0.g0", 2)]
    assert sorted((o[0], o[1], o[2]) for o in out) == [("run.t0.g0", 0, 2), ("run.t0.g0", 1, 2)]


def test_a_group_of_known_size_that_never_fills_fails_every_member_naming_the_group() -> None:
    engine = Engine()
    engine.release.set()
    g = Gatherer(engine.drive, "run", gather_s=0.05, group_size=3, group_timeout_s=0.5)
    errors: list[BaseException] = []

    def one(k: int) -> None:
        try:
            g.run("a", "t0", {"instruction": "x"}, ("_ng_rollout_index", k), timeout_s=10)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(2)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert time.monotonic() - started < 5
    assert engine.tasks == []  # nothing of a partial group runs
    assert len(errors) == 2
    for err in errors:
        assert isinstance(err, GroupIncomplete)
        assert "group run.t0.g0: 2 of its 3 repeats came in 0.5 s" in str(err)


def test_a_group_of_unknown_size_split_by_a_late_repeat_is_marked_short_on_every_member() -> None:
    engine = Engine()
    g = Gatherer(engine.drive, "run", gather_s=0.1)
    tickets: list[Any] = []
    results: list[Any] = []

    def one(k: int) -> None:
        ticket = g.join("a", "t0", {"instruction": "x"}, ("_ng_rollout_index", k))
        tickets.append(ticket)
        results.append(g.wait(ticket, timeout_s=10))

    first = threading.Thread(target=one, args=(0,))
    first.start()
    time.sleep(0.5)  # the first group closed on the window and runs
    second = threading.Thread(target=one, args=(1,))
    second.start()
    time.sleep(0.3)
    engine.release.set()
    first.join(10)
    second.join(10)
    assert [t["num_samples"] for t in engine.tasks] == [1, 1]
    assert g.shorts == 2
    for ticket in tickets:
        reason = g.short_reason(ticket)
        assert reason is not None and "group run.t0.g0 closed after 0.1 s" in reason and "run.t0.g1" in reason


def test_the_same_repeat_again_after_its_group_ran_is_a_new_sample_not_a_split() -> None:
    engine = Engine()
    engine.release.set()
    g = Gatherer(engine.drive, "run", gather_s=0.05)
    first = g.join("a", "t0", {"instruction": "x"}, ("_ng_rollout_index", 0))
    g.wait(first, timeout_s=10)
    again = g.join("a", "t0", {"instruction": "x"}, ("_ng_rollout_index", 0))
    g.wait(again, timeout_s=10)
    assert (g.short_reason(first), g.short_reason(again), g.shorts) == (None, None, 0)


# -- every request gets an answer (issue 48 item 8) -------------------------------------------


def serve_agent(drive: Any, **server: Any) -> tuple[Any, tuple[str, int]]:
    agent = PolarAgent(ControlClient("http://127.0.0.1:9", "control"), TEMPLATE, "r", timeout_s=5, gather_s=0.05)
    agent.gatherer = Gatherer(drive, "r", gather_s=0.05)
    srv = make_server(agent, "127.0.0.1", 0, "polar_agent", TOKEN, **server)
    srv.agent_for_tests = agent  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, ("127.0.0.1", int(srv.server_address[1]))


def answer_of(addr: tuple[str, int], row: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    body = json.dumps(row).encode()
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(headers("/run", f"Content-Length: {len(body)}").encode() + b"\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < int(
            next(
                (line.split(b":")[1] for line in data.split(b"\r\n") if line.lower().startswith(b"content-length:")),
                b"0",
            )
        ):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1").split("\r\n", 1)[0], json.loads(rest) if rest else {}


@pytest.mark.parametrize("status", ["ERROR", "TIMEOUT"])
def test_a_failed_sessions_row_is_answered_in_nemo_gyms_failure_shape(status: str) -> None:
    # The answer's `error` is a string: the handler read it as {"message": ...} and died, and
    # ng_collect_rollouts waited forever.
    def drive(task: dict[str, Any]) -> Iterator[SessionResult]:
        yield SessionResult(task["task_id"], "s0", 0, 0, status, None, "harness exited 1", [])

    srv, addr = serve_agent(drive)
    try:
        line, doc = answer_of(addr, ROW)
    finally:
        srv.shutdown()
        srv.server_close()
    assert line.startswith("HTTP/1.1 200"), line
    assert doc["_ng_failure_class"] == "polar_no_reward" and doc["error"] == "harness exited 1"
    assert doc["polar"]["status"] == status


def test_any_error_of_the_session_is_a_failure_row_and_any_other_a_500_with_its_type() -> None:
    def drive(task: dict[str, Any]) -> Iterator[SessionResult]:
        raise KeyError("results")
        yield  # pragma: no cover

    srv, addr = serve_agent(drive)
    try:
        line, doc = answer_of(addr, ROW)
        assert line.startswith("HTTP/1.1 200"), line
        assert doc["_ng_failure_class"] == "polar_agent_error" and "r.t0.g0: KeyError: 'results'" in doc["error"]
        # Outside the session (here the answer itself fails): still answered, never a dead thread.
        agent = srv.agent_for_tests  # break its answer
        agent.run = lambda row: (_ for _ in ()).throw(ValueError("bad answer"))
        line, doc = answer_of(addr, ROW)
    finally:
        srv.shutdown()
        srv.server_close()
    assert line.startswith("HTTP/1.1 500 polar agent: ValueError: bad answer"), line


# -- idle connections (issue 49 item 5) -------------------------------------------------------


def test_idle_and_trickling_connections_are_bounded_and_dropped_before_the_token_is_checked() -> None:
    # 500 connections that never sent a byte stayed open 40 s, holding 503 threads.
    def drive(task: dict[str, Any]) -> Iterator[SessionResult]:
        yield fake_result(task["task_id"], 0, 1.0)

    threads_before = threading.active_count()
    srv, addr = serve_agent(drive, max_connections=8, idle_s=2.0)
    idle = [socket.create_connection(addr, timeout=5) for _ in range(40)]
    trickle = idle[0]
    try:
        time.sleep(0.5)
        # Held at once: at most 8 (plus the server's own loop and reaper threads).
        assert threading.active_count() - threads_before <= 8 + 2
        # The ones over the bound were told so and closed at once.
        busy = 0
        for s in idle[8:]:
            s.settimeout(2)
            answer = s.recv(200)
            busy += answer.startswith(b"HTTP/1.1 503")
        assert busy == 32
        # One byte every 0.3 s never completes a request head: cut off by the deadline all the same.
        trickle.sendall(b"P")
        started = time.monotonic()
        for s in idle[:8]:
            s.settimeout(5)
            try:
                while True:
                    if s is trickle and time.monotonic() - started < 6:
                        s.sendall(b"O")
                    s.settimeout(0.3 if s is trickle else 5)
                    try:
                        if s.recv(200) == b"":
                            break
                    except TimeoutError:
                        continue
            except OSError:
                pass  # reset: dropped too
        assert time.monotonic() - started < 5
        time.sleep(0.2)
        assert threading.active_count() - threads_before <= 2
        # A real request still gets through afterwards.
        line, doc = answer_of(addr, ROW)
        assert line.startswith("HTTP/1.1 200"), line
        assert srv.refused == 32 and srv.dropped >= 1  # the trickle, by the deadline
    finally:
        for s in idle:
            s.close()
        srv.shutdown()
        srv.server_close()

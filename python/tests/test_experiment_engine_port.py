"""The experiment's engine is the one it started, never a stranger on its port.

A port is free when ``free_port`` picks it, but vLLM binds it only after its imports (10 s or
more on a busy machine); a server started in between holds it and answers /health. A CI run once
sent a template family's session to such a server. Here the stranger is an HTTP server on the
port picked first that answers /health and an OpenAI model list with ``policy``, as another
engine would: the stack must start vLLM on another port when it picked the port itself, and
refuse (not use the stranger) when the caller gave the port. An engine of the stack's own that
refuses its model list (an ``--api-key`` in the extra args) is named as the reason at once.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.engine_lane import ROOT, needs_engine_lane
from support.engine_stack import copy_tiny_model

sys.path.insert(0, str(ROOT / "python" / "src"))

from polar_rollouts.experiment import stack  # noqa: E402


class Stranger(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"object": "list", "data": [{"id": "policy", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture()
def stranger_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stranger)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@needs_engine_lane
def test_a_picked_port_another_server_took_is_given_up_for_a_new_one(
    tmp_path: Path, stranger_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    picks = [stranger_port]
    real_free_port = stack.free_port
    monkeypatch.setattr(stack, "free_port", lambda: picks.pop() if picks else real_free_port())
    model = copy_tiny_model(tmp_path / "model")
    with stack.engine_only(tmp_path / "out", model, root=ROOT) as url:
        assert url != f"http://127.0.0.1:{stranger_port}"
    assert not picks, "the stranger's port was never picked: the case did not happen"
    assert f"127.0.0.1:{stranger_port} was taken before vLLM bound it" in capsys.readouterr().err


@needs_engine_lane
def test_a_given_port_another_server_holds_is_refused_not_used(tmp_path: Path, stranger_port: int) -> None:
    model = copy_tiny_model(tmp_path / "model")
    with pytest.raises(stack.PortTaken, match="held by another process"):
        with stack.engine_only(tmp_path / "out", model, root=ROOT, engine_port=stranger_port):
            pytest.fail("the stack yielded the stranger as its engine")


@needs_engine_lane
def test_an_engine_given_an_api_key_is_named_as_the_reason_not_waited_for(tmp_path: Path) -> None:
    # Its model list answers 401 once it serves; the stack cannot tell it from a stranger by the
    # list, but vLLM's own log says it bound the port, so the refusal is its key.
    model = copy_tiny_model(tmp_path / "model")
    args = ("--no-enable-prefix-caching", "--api-key", "k")
    started = time.monotonic()
    with pytest.raises(stack.StackError, match="takes no --api-key"):
        with stack.engine_only(tmp_path / "out", model, root=ROOT, engine_args=args):
            pytest.fail("an engine whose model list refuses the stack was yielded")
    assert time.monotonic() - started < 200, "waited for the start timeout instead of naming the key"

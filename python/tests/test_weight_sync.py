"""polar_rollouts.weight_sync: the order of the sequence, resume after a failed push, and the
refusals, against a stand-in engine that records what it is asked (the real vLLM runs it in
test_trl_plugin_engine.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from polar_rollouts.weight_sync import VllmWeightSync, WeightSyncError

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")


class Engine(BaseHTTPRequestHandler):
    """GET /weight_info answers ``version`` (404 when ``has_version`` is off); ``fail`` makes one
    path answer 500; every request is logged with the weights file's bytes at that moment."""

    log: list[tuple[str, str]] = []
    version = "default"
    has_version = True
    stuck = False
    fail: str | None = None
    weights: Path | None = None

    def _answer(self, status: int, doc: Any) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        cls = type(self)
        cls.log.append((method, self.path))
        if self.path == cls.fail:
            return self._answer(500, {"error": "boom"})
        if self.path == "/weight_info":
            if not cls.has_version:
                return self._answer(404, {"detail": "Not Found"})
            return self._answer(200, {"weight_version": cls.version})
        if self.path == "/update_weight_version" and not cls.stuck:
            cls.version = body["new_version"]
        if self.path == "/collective_rpc" and cls.weights is not None:
            cls.log.append(("read", safetensors_torch.load_file(str(cls.weights))["w"].tolist().__repr__()))
        self._answer(200, {})

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def engine(tmp_path: Path) -> Iterator[tuple[str, type[Engine]]]:
    handler = type("E", (Engine,), {"log": [], "version": "default", "has_version": True, "stuck": False, "fail": None})
    handler.weights = tmp_path / "model.safetensors"
    safetensors_torch.save_file({"w": torch.zeros(2)}, str(handler.weights))
    (tmp_path / "config.json").write_text(json.dumps({"tie_word_embeddings": False}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()


def test_pause_write_reload_version_resume_in_that_order(engine: tuple[str, type[Engine]], tmp_path: Path) -> None:
    url, handler = engine
    sync = VllmWeightSync(url, tmp_path)
    handler.log.clear()
    report = sync.push({"w": torch.ones(2), "unused": torch.ones(1)}, 3)
    assert handler.log == [
        ("POST", "/pause?mode=keep"),
        ("POST", "/collective_rpc"),
        ("read", "[1.0, 1.0]"),  # the engine reloads what was written while it was paused
        ("POST", "/update_weight_version"),
        ("GET", "/weight_info"),
        ("POST", "/resume"),
    ]
    assert report.version == "3" and report.reported == {url: "3"}


def test_a_failed_reload_still_resumes(engine: tuple[str, type[Engine]], tmp_path: Path) -> None:
    url, handler = engine
    sync = VllmWeightSync(url, tmp_path)
    handler.fail = "/collective_rpc"
    handler.log.clear()
    with pytest.raises(WeightSyncError, match="collective_rpc: HTTP 500"):
        sync.push({"w": torch.ones(2)}, 1)
    assert handler.log[-1] == ("POST", "/resume")
    assert ("POST", "/update_weight_version") not in handler.log


def test_an_engine_naming_another_version_fails_the_push(engine: tuple[str, type[Engine]], tmp_path: Path) -> None:
    url, handler = engine
    sync = VllmWeightSync(url, tmp_path)
    handler.stuck = True  # takes /update_weight_version but keeps reporting the old one
    with pytest.raises(WeightSyncError, match="reports weight version 'default' after the push of '2'"):
        sync.push({"w": torch.ones(2)}, 2)
    assert handler.log[-1] == ("POST", "/resume")


def test_an_engine_without_a_version_needs_the_control_api(engine: tuple[str, type[Engine]], tmp_path: Path) -> None:
    url, handler = engine
    handler.has_version = False
    with pytest.raises(WeightSyncError, match="reports no weight version .* pass control="):
        VllmWeightSync(url, tmp_path)

    class Control:
        versions: list[int] = []

        def set_policy_version(self, version: int) -> None:
            self.versions.append(version)

    control = Control()
    sync = VllmWeightSync(url, tmp_path, control=control)
    assert sync.version_source == "control"
    report = sync.push({"w": torch.ones(2)}, 4)
    assert control.versions == [4] and report.reported == {url: None}
    with pytest.raises(WeightSyncError, match="the training step"):
        sync.set_version("step-5")


def test_an_engine_with_a_version_also_gets_it_through_the_control_api(
    engine: tuple[str, type[Engine]], tmp_path: Path
) -> None:
    # The proxy reads the trainer's version from its store when the engine's /weight_info read fails
    # under load, so the step goes both ways, before the resume (docs/engines.md "Versions under load").
    url, handler = engine

    class Control:
        def set_policy_version(self, version: int) -> None:
            handler.log.append(("control", str(version)))

    sync = VllmWeightSync(url, tmp_path, control=Control())
    assert sync.version_source == "engine"
    handler.log.clear()
    sync.push({"w": torch.ones(2)}, 6)
    assert handler.log[-3:] == [("GET", "/weight_info"), ("control", "6"), ("POST", "/resume")]
    sync.set_version(7)
    assert handler.log[-2:] == [("POST", "/update_weight_version"), ("control", "7")]
    handler.log.clear()
    sync.set_version("step-8")  # a label: the engine's alone (the control API orders integer steps)
    assert handler.log == [("POST", "/update_weight_version")]


def test_refusals(engine: tuple[str, type[Engine]], tmp_path: Path) -> None:
    url, _ = engine
    with pytest.raises(WeightSyncError, match="lack 1 tensor"):
        VllmWeightSync(url, tmp_path).push({"v": torch.ones(2)}, 1)
    (tmp_path / "config.json").write_text(json.dumps({"tie_word_embeddings": True}))
    with pytest.raises(WeightSyncError, match="tie_word_embeddings is true"):
        VllmWeightSync(url, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WeightSyncError, match="neither model.safetensors"):
        VllmWeightSync(url, empty)
    with pytest.raises(WeightSyncError, match="weight_info: .*refused"):
        VllmWeightSync("http://127.0.0.1:9", tmp_path, allow_tied_embeddings=True)

"""Shared fixtures. Everything the tests start listens on 127.0.0.1; nothing is downloaded."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# No hub access, ever: the model in the training-step test is built from a config, the
# tokenizer vocabulary is read from the package the project ships.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).resolve().parent / "support"


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node (>= 22.18) must be on PATH for the Python tests")
    return found


@dataclass
class NodeService:
    """A Node helper that printed one JSON line and runs until its stdin closes."""

    info: dict[str, Any]
    process: subprocess.Popen[str]

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait(timeout=10)


def start_node_service(script: str, *args: str) -> NodeService:
    process = subprocess.Popen(
        [node(), str(SUPPORT / script), *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        err = process.stderr.read() if process.stderr else ""
        process.wait()
        raise RuntimeError(f"{script} exited with {process.returncode}: {err}")
    return NodeService(info=json.loads(line), process=process)


@pytest.fixture(scope="session")
def polar_run_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store of one `npx polar run examples/tasks.jsonl` (dry-run policy, real Qwen3 tokenizer)."""
    out = tmp_path_factory.mktemp("polar-run")
    done = subprocess.run(
        ["npx", "--no-install", "polar", "run", "examples/tasks.jsonl", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "store"


@pytest.fixture(scope="session")
def s3rver() -> Iterator[dict[str, Any]]:
    service = start_node_service("s3rver.ts", "polar-py")
    try:
        yield service.info
    finally:
        service.stop()


@pytest.fixture(scope="session")
def control_stack() -> Iterator[dict[str, Any]]:
    service = start_node_service("control-stack.ts")
    try:
        yield service.info
    finally:
        service.stop()


@pytest.fixture()
def s3_env(monkeypatch: pytest.MonkeyPatch, s3rver: dict[str, Any]) -> dict[str, Any]:
    for name, value in s3rver["env"].items():
        monkeypatch.setenv(name, value)
    return s3rver


def trainer_module(name: str, why: str) -> Any:
    """Imports a trainer's module; skips when it is missing, except under scripts/test-python.sh
    (POLAR_REQUIRE_TRAINERS=1), where scripts/setup-python.sh installed it and a miss is a failure."""
    if os.environ.get("POLAR_REQUIRE_TRAINERS") == "1":
        import importlib

        return importlib.import_module(name)
    return pytest.importorskip(name, reason=why)


@contextlib.contextmanager
def running_polar(pattern: str, *args: str) -> Iterator[re.Match[str]]:
    """`npx polar ARGS` until the block ends; yields the match of ``pattern`` on its first lines."""
    process = subprocess.Popen(
        [node(), str(ROOT / "bin" / "polar.js"), *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen = ""
    for line in process.stdout:
        seen += line
        found = re.search(pattern, line)
        if found:
            break
    else:
        process.wait()
        raise RuntimeError(f"polar {args[0]} did not start:\n{seen}")
    # Keep draining its output so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in process.stdout or []], daemon=True).start()
    try:
        yield found
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def polar_serve_at(out: Path) -> Iterator[dict[str, Any]]:
    """`npx polar serve`: the control API, an in-memory queue, a directory store and a runner."""
    with running_polar(r"--proxy (http://127\.0\.0\.1:\d+) --control-token ([0-9a-f]+)", "serve", "--port", "0", "--out", str(out)) as found:
        yield {"proxy_url": found.group(1), "token": found.group(2), "store": out}


@contextlib.contextmanager
def polar_policy() -> Iterator[str]:
    """`npx polar policy`: a dry-run policy of its own, standing for an engine a trainer started;
    yields its base URL (its GET /debug/requests lists what it was asked)."""
    with running_polar(r"listening on (http://127\.0\.0\.1:\d+)", "policy", "--port", "0") as found:
        yield found.group(1)


@pytest.fixture(scope="session")
def polar_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`npx polar serve` shared by the session's tests (routing to its own dry-run policy)."""
    with polar_serve_at(tmp_path_factory.mktemp("polar-serve")) as serve:
        yield serve

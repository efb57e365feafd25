"""A real vLLM (scripts/engine.sh serving a copy of the tiny untied Qwen3) with `polar serve
--upstream` in front of it, the stack examples/rl_on_cpu.py trains against and the TRL plug-in's
engine test and benchmark (python/tests/support/engine_stack.py) run on. Both processes run in
their own sessions and are stopped, with their children, when the context ends."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / ".cache" / "engine" / "tiny-qwen3"


class StackError(RuntimeError):
    """A process of the stack did not come up; the message holds the tail of its log."""


@dataclass(frozen=True)
class Stack:
    engine_url: str
    proxy_url: str
    token: str
    model_dir: Path
    store: Path
    engine_log: Path
    serve_log: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StackError(f"{proc.args!r} exited ({proc.returncode}); {log}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as res:
                if res.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise StackError(f"no answer from {url} after {timeout_s:.0f}s; {log}:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes] | None, sig: int) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def copy_tiny_model(model_dir: Path) -> Path:
    """A fresh copy of the engine lane's model (made once, in seconds): each weight sync overwrites
    the weights file the engine reloads from."""
    return copy_preset_model(model_dir, "qwen3")


def copy_preset_model(model_dir: Path, preset: str) -> Path:
    """A fresh copy of an engine preset's model (scripts/engine/presets/<preset>.sh), built first
    when it is not there yet."""
    engine = ["bash", str(ROOT / "scripts" / "engine.sh")]
    source = Path(subprocess.run([*engine, "model-dir", "--preset", preset], check=True, cwd=ROOT,
                                 capture_output=True, text=True).stdout.strip())  # fmt: skip
    if not (source / "model.safetensors").exists():
        subprocess.run([*engine, "setup", "--preset", preset], check=True, cwd=ROOT)
    shutil.rmtree(model_dir, ignore_errors=True)
    shutil.copytree(source, model_dir)
    return model_dir


@contextmanager
def engine_stack(
    out: Path, model_dir: Path, *, seed: int = 0, run: int = 4, engine_port: int | None = None, preset: str = "qwen3"
) -> Iterator[Stack]:
    """vLLM (float32, processed logprobs, RL endpoints, no prefix cache) serving ``model_dir`` and
    `polar serve` (store ``out/store``) in front of it; ``engine_port`` when the caller needs the
    engine's address before it starts."""
    out.mkdir(parents=True, exist_ok=True)
    engine_port, proxy_port = engine_port or free_port(), free_port()
    engine_url, proxy_url = f"http://127.0.0.1:{engine_port}", f"http://127.0.0.1:{proxy_port}"
    token = secrets.token_hex(16)
    engine_log, serve_log = out / "engine.log", out / "serve.log"
    env = {**os.environ, "POLAR_CONTROL_TOKEN": "", "HF_HUB_OFFLINE": "1"}
    node = shutil.which("node")
    if node is None:
        raise StackError("node (>= 22.18) must be on PATH for polar serve")
    engine: subprocess.Popen[bytes] | None = None
    serve: subprocess.Popen[bytes] | None = None
    try:
        # Prefix caching off: no KV block computed by older weights serves a request after a sync.
        engine = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "engine.sh"), "serve", "--port", str(engine_port), "--model-dir",
             str(model_dir), "--preset", preset, "--", "--no-enable-prefix-caching", "--seed", str(seed)],
            stdout=engine_log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT, env=env,
        )  # fmt: skip
        wait_healthy(f"{engine_url}/health", engine, engine_log, 300)
        serve = subprocess.Popen(
            [node, str(ROOT / "bin" / "polar.js"), "serve", "--upstream", engine_url, "--port", str(proxy_port),
             "--out", str(out), "--control-token", token, "--run", str(run)],
            stdout=serve_log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT, env=env,
        )  # fmt: skip
        wait_healthy(f"{proxy_url}/healthz", serve, serve_log, 60)
        yield Stack(engine_url, proxy_url, token, model_dir, out / "store", engine_log, serve_log)
    finally:
        stop(serve, signal.SIGINT)
        stop(engine, signal.SIGTERM)

"""The real vLLM lane (scripts/engine.sh, a copy of the tiny untied Qwen3) with `polar serve
--upstream` in front of it, for the TRL plug-in's test and benchmark. Both processes run in their
own sessions and are stopped, with their children, when the context ends."""

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
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
ENGINE_PYTHON = ROOT / ".venv-engine" / "bin" / "python"
TINY = ROOT / ".cache" / "engine" / "tiny-qwen3"


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
            raise RuntimeError(f"{proc.args!r} exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as res:
                if res.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"no answer from {url} after {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")


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


@contextmanager
def engine_stack(out: Path, *, seed: int = 0, run: int = 4) -> Iterator[Stack]:
    """vLLM (float32, processed logprobs, RL endpoints, no prefix cache) serving ``out/model`` and
    `polar serve` (store ``out/store``) in front of it."""
    out.mkdir(parents=True, exist_ok=True)
    if not (TINY / "model.safetensors").exists():
        subprocess.run(["bash", str(ROOT / "scripts" / "engine.sh"), "setup"], check=True, cwd=ROOT)
    model_dir = out / "model"
    shutil.rmtree(model_dir, ignore_errors=True)
    shutil.copytree(TINY, model_dir)  # each sync overwrites the weights the engine reloads
    engine_port, proxy_port = free_port(), free_port()
    engine_url, proxy_url = f"http://127.0.0.1:{engine_port}", f"http://127.0.0.1:{proxy_port}"
    token = secrets.token_hex(16)
    engine_log, serve_log = out / "engine.log", out / "serve.log"
    env = {**os.environ, "POLAR_CONTROL_TOKEN": "", "HF_HUB_OFFLINE": "1"}
    engine = serve = None
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node (>= 22.18) must be on PATH for polar serve")
    try:
        # Prefix caching off: no KV block computed by older weights serves a request after a sync.
        engine = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "engine.sh"), "serve", "--port", str(engine_port), "--model-dir",
             str(model_dir), "--", "--no-enable-prefix-caching", "--seed", str(seed)],
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


def lowercase_task(task_id: str, instruction: str, max_tokens: int, *, split: bool = False) -> dict[str, Any]:
    """examples/rl_on_cpu.py's task: two calls a session (two-turn-agent.mjs), scored by the share
    of lowercase letters. Token-in-token-out splices the calls into one trace; the per_request
    builder gives one trace per call instead."""
    return {
        "task_id": task_id,
        "num_samples": 1,  # the plug-in sets num_generations
        "timeout_seconds": 120,
        "instruction": instruction,
        "agent": {
            "harness": "shell",
            "settings": {"command": "node {{polar_root}}/examples/agents/two-turn-agent.mjs {{instruction}}"},
            "sampling": {"max_tokens": max_tokens},
            "token_in_token_out": not split,
        },
        **({"builder": {"strategy": "per_request"}} if split else {}),
        "evaluator": {
            "strategy": "test_on_output",
            "config": {
                "command": "node lowercase-score.mjs",
                "files": {"lowercase-score.mjs": (ROOT / "examples" / "rl" / "lowercase-score.mjs").read_text()},
                "expected_lines": [f"ok {i}" for i in range(1, 101)],
                "partial_credit": True,
            },
        },
    }

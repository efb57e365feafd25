"""batch-runner/harness/python/mini_swe_agent_driver.py in the real mini-swe-agent 2.4.6 venv the
preset installs (the harness cache; vitest's e2e lane installs it before these tests run in CI).

A small Chat Completions server on 127.0.0.1 plays the model with scripted replies, so the driver's
own decisions are what is checked: mini-swe-agent's text-based mode runs the fenced command it is
given, the agent's own ends (submitted, out of steps) exit 0 for the judge to score, and a model
class that would talk to another provider than the proxy is refused.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

DRIVER = ROOT / "batch-runner" / "harness" / "python" / "mini_swe_agent_driver.py"
VERSION = re.search(r'version: "([^"]+)"', (ROOT / "batch-runner/harness/mini-swe-agent.ts").read_text())
CACHE = Path(os.environ.get("POLAR_HARNESS_CACHE") or Path.home() / ".cache" / "polar-harnesses")
PYTHON = CACHE / f"mini_swe_agent@{VERSION.group(1) if VERSION else '?'}" / "venv" / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not PYTHON.exists() and not os.environ.get("CI"),
    reason=f"mini-swe-agent's venv is not installed ({PYTHON}); the harness e2e test installs it",
)


class _Model(BaseHTTPRequestHandler):
    replies: list[str] = []
    asked: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).asked.append(body)
        text = self.replies[min(len(self.asked) - 1, len(self.replies) - 1)]
        answer = {
            "id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def model() -> Iterator[tuple[str, type[_Model]]]:
    handler = type("Model", (_Model,), {"replies": [], "asked": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


def run_driver(tmp_path: Path, base_url: str, config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    settings = {"model": "policy", "base_url": base_url, "trajectory_path": str(tmp_path / "traj.json"),
                "config": config}  # fmt: skip
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "POLAR_API_KEY": "k", "MSWEA_CONFIGURED": "true",
           "MSWEA_SILENT_STARTUP": "1", "MSWEA_COST_TRACKING": "ignore_errors", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "cfg"), "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1"}  # fmt: skip
    return subprocess.run([str(PYTHON), str(DRIVER), str(tmp_path / "settings.json"), "Write 5 to answer.txt."],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


TEXT_MODE = {"model": {"model_class": "litellm_textbased"}, "agent": {"step_limit": 3, "cost_limit": 0}}


def test_text_based_mode_runs_the_fenced_command_and_submits(tmp_path: Path, model: tuple[str, type[_Model]]) -> None:
    url, handler = model
    handler.replies = ["Writing it.\n```mswea_bash_command\necho 5 > answer.txt\n```",
                       "```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"]  # fmt: skip
    done = run_driver(tmp_path, url, TEXT_MODE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "work" / "answer.txt").read_text() == "5\n"
    assert json.loads(done.stdout.splitlines()[-1])["polar_result"]["exit_status"] == "Submitted"
    # Text-based: no tool list offered, and the command's output came back as a user message.
    assert "tools" not in handler.asked[0]
    assert "<returncode>0</returncode>" in handler.asked[1]["messages"][-1]["content"]


def test_running_out_of_steps_is_the_agents_outcome_not_a_crash(tmp_path: Path, model: tuple[str, type[_Model]]) -> None:
    url, handler = model
    handler.replies = ["```mswea_bash_command\nls\n```"]  # never submits
    done = run_driver(tmp_path, url, TEXT_MODE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1])["polar_result"]["exit_status"] == "LimitsExceeded"
    assert len(handler.asked) == 3


def test_a_model_class_that_would_bypass_the_proxy_is_refused(tmp_path: Path, model: tuple[str, type[_Model]]) -> None:
    url, handler = model
    done = run_driver(tmp_path, url, {"model": {"model_class": "openrouter"}})
    assert done.returncode == 2 and "'openrouter' is not one of" in done.stderr, done.stderr[-2000:]
    assert handler.asked == []


def test_a_crashed_harness_still_exits_nonzero(tmp_path: Path) -> None:
    # Nothing listens there: litellm's connection error is the harness failing, not an agent's end.
    done = run_driver(tmp_path, "http://127.0.0.1:9/v1", TEXT_MODE)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]

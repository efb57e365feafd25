"""examples/trainer_loop.py end to end against the Node control-API stack."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, node


def test_trainer_loop_runs_a_group_with_a_spread_of_rewards(control_stack: dict[str, Any]) -> None:
    """examples/grpo-tasks.jsonl: sample i follows script alternative i mod 3 (right, half right, wrong),
    so the group's rewards differ and every GRPO advantage is non-zero."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "trainer_loop.py"),
            *("--proxy", control_stack["proxy_url"], "--control-token", control_stack["admin_token"]),
            *("--tasks", str(ROOT / "examples" / "grpo-tasks.jsonl")),
            *("--task-id", "first-primes", "--as", "py-loop-primes", "--timeout-s", "120"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "submitted py-loop-primes: 3 sessions enqueued" in out, out
    sessions = sorted(re.findall(r"session (py-loop-primes-\d): COMPLETED", out))
    assert sessions == ["py-loop-primes-0", "py-loop-primes-1", "py-loop-primes-2"], out
    inputs = [dict(re.findall(r"(\w+)=(\S+)", line)) for line in out.splitlines() if line.startswith("optimizer input:")]
    assert len(inputs) == 3, out
    by_session = {fields["session"]: fields for fields in inputs}
    rewards = [float(by_session[f"py-loop-primes-{i}"]["reward"]) for i in range(3)]
    assert rewards == pytest.approx([1.0, 2 / 3, 0.0]), out
    mean = sum(rewards) / 3
    for fields in inputs:
        assert int(fields["input_ids"]) == int(fields["prompt"]) + int(fields["response"]), out
        assert 0 < int(fields["trainable"]) < int(fields["response"]), out
        advantage = float(fields["advantage"])
        assert advantage != 0.0 and (advantage > 0) == (float(fields["reward"]) > mean), out
    assert "reward spread 1" in out, out
    assert "GRPO advantages are 0" not in out, out


def test_trainer_loop_says_when_a_group_has_no_spread(control_stack: dict[str, Any]) -> None:
    """A script without alternatives: every sample scores the same, and the example says why."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "trainer_loop.py"),
            *("--proxy", control_stack["proxy_url"], "--control-token", control_stack["admin_token"]),
            *("--task-id", "hello-file", "--as", "py-loop-hello", "--timeout-s", "120"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    advantages = re.findall(r"advantage=(\S+)", done.stdout)
    assert len(advantages) == 2 and all(float(a) == 0.0 for a in advantages), done.stdout
    assert "GRPO advantages are 0" in done.stdout, done.stdout


def test_trainer_loop_reports_a_bad_task_id(control_stack: dict[str, Any]) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "trainer_loop.py"), "--proxy", control_stack["proxy_url"],
         "--control-token", control_stack["admin_token"], "--task-id", "no-such-task"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0 and "no task 'no-such-task'" in done.stderr


def test_trainer_loop_against_polar_serve(polar_serve: dict[str, Any]) -> None:
    """The one-command local control API: results and the shard come through its signed local URLs."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "trainer_loop.py"),
            *("--proxy", polar_serve["proxy_url"], "--control-token", polar_serve["token"]),
            *("--task-id", "per-request-builder", "--as", "py-serve-per-request", "--timeout-s", "120"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "session py-serve-per-request-0: COMPLETED reward=1.0 traces=2" in done.stdout, done.stdout
    assert len([line for line in done.stdout.splitlines() if line.startswith("optimizer input:")]) == 2, done.stdout


def _example_module() -> Any:
    spec = importlib.util.spec_from_file_location("trainer_loop_example", ROOT / "examples" / "trainer_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ts_task_ids(path: Path) -> list[str]:
    """The task ids the CLI's own parser (batch-runner/submit.ts) reads from a file."""
    script = (
        "import { readFileSync } from 'node:fs';"
        "import { parseTasksJsonl } from './batch-runner/submit.ts';"
        "const p = parseTasksJsonl(readFileSync(process.argv[1], 'utf8'));"
        "console.log(JSON.stringify({ ids: p.tasks.map((t) => t.task_id), errors: p.errors }));"
    )
    done = subprocess.run(
        [node(), "--input-type=module", "-e", script, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    parsed = json.loads(done.stdout)
    assert parsed["errors"] == [], parsed
    return list(parsed["ids"])


def test_load_task_skips_comment_lines_as_polar_run_does(tmp_path: Path) -> None:
    """docs/tasks.md allows `//` lines; the example must read every task the CLI reads, and no other."""
    lines = (ROOT / "examples" / "tasks.jsonl").read_text().splitlines()
    tasks = tmp_path / "commented.jsonl"
    tasks.write_text("\n".join(["// my tasks", "", *(f"{line}\n  // after {i}" for i, line in enumerate(lines))]) + "\n")
    ids = _ts_task_ids(tasks)
    assert len(ids) == len([line for line in lines if line.strip() and not line.lstrip().startswith("//")])
    module = _example_module()
    for task_id in ids:
        assert module.load_task(tasks, task_id)["task_id"] == task_id
    with pytest.raises(SystemExit, match="no task 'absent'"):
        module.load_task(tasks, "absent")


def test_load_task_names_the_line_of_a_pretty_printed_file(tmp_path: Path) -> None:
    tasks = tmp_path / "pretty.jsonl"
    tasks.write_text('{\n  "task_id": "x",\n  "instruction": "hi"\n}\n')
    with pytest.raises(SystemExit, match=r"pretty.jsonl:1: not valid JSON: .*one task per line"):
        _example_module().load_task(tasks, "x")

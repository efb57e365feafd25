"""Every request gets an answer (issue 48 item 8): a session that fails (the harness exits 1),
times out, or is refused reaches each ecosystem's own client in that client's failure shape, and
the client finishes. NeMo Gym's own `ng_collect_rollouts` (nemo-gym 0.4.0, its venv) against
`python -m polar_rollouts.nemo_gym` and `polar serve`; it waited forever on a failed session's
row (the agent's handler died on the row's string `error`). A refused row ends the collection
with the reason (test/integration/nemo-gym.test.ts); a group that never fills fails each member
naming it (test_nemo_gym_server.py)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import trainer_module
from support.ecosystem import ROOT, ecosystem_venv, env_of

AGENT_TOKEN = "ng-agent-token-failures"
TEMPLATE = {
    "agent": {"harness": "shell", "settings": {"command": "false"}},
    "evaluator": {"strategy": "session_completed"},
    "timeout_seconds": 60,
}
# The harness exits 1 at once; the other sleeps past its 3 s.
FAILS = {"responses_create_params": {"input": "fail"}, "polar_task": {"task_id": "fails"}}
SLOW = {
    "responses_create_params": {"input": "slow"},
    "polar_task": {"task_id": "slow", "agent": {"settings": {"command": "sleep 60"}}, "timeout_seconds": 3},
}


@pytest.fixture(scope="module")
def nemo_gym() -> Path:
    return ecosystem_venv("nemo-gym")


class Agent:
    def __init__(self, venv: Path, serve: dict[str, Any], cwd: Path, *flags: str) -> None:
        (cwd / "template.json").write_text(json.dumps(TEMPLATE))
        self.process = subprocess.Popen(
            [
                str(venv / "bin" / "python"),
                *("-m", "polar_rollouts.nemo_gym", "--control", serve["proxy_url"], "--run-id", "fail"),
                *("--task-template", str(cwd / "template.json"), "--port", "0"),
                *("--row-fields", "instruction,task_id,agent.settings,timeout_seconds", *flags),
            ],
            cwd=cwd,
            env=env_of(POLAR_CONTROL_TOKEN=serve["token"], POLAR_NEMO_GYM_TOKEN=AGENT_TOKEN),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"at http://127\.0\.0\.1:(\d+)", line)
        assert found, line
        self.port = int(found.group(1))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def agent(nemo_gym: Path, polar_serve: dict[str, Any], tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Agent]:
    a = Agent(nemo_gym, polar_serve, tmp_path, *getattr(request, "param", ()))
    yield a
    a.stop()


def collect(venv: Path, agent: Agent, rows: list[dict[str, Any]], out: Path, repeats: int) -> tuple[int | None, str, float]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    started = time.monotonic()
    try:
        done = subprocess.run(
            [
                str(venv / "bin" / "ng_collect_rollouts"),
                "+agent_name=polar_agent",
                f"+input_jsonl_fpath={out / 'in.jsonl'}",
                f"+output_jsonl_fpath={out / 'rollouts.jsonl'}",
                f"+head_server={{host:'polar:{AGENT_TOKEN}@127.0.0.1',port:{agent.port}}}",
                f"+num_repeats={repeats}",
                "+num_samples_in_parallel=4",
            ],
            cwd=out,
            env=env_of(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("ng_collect_rollouts did not finish in 120 s: a /run was never answered")
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def failures(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "rollouts_failures.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("agent", [("--group-size", "2")], indirect=True)
def test_nemo_gym_collection_ends_with_failed_and_timed_out_sessions_in_its_failures_file(
    nemo_gym: Path, agent: Agent, tmp_path: Path
) -> None:
    status, output, took = collect(nemo_gym, agent, [FAILS, SLOW], tmp_path / "out", repeats=2)
    assert status == 0, output[-3000:]
    assert took < 90
    rows = failures(tmp_path / "out")
    assert sorted((r["polar"]["task_id"].split(".")[1], r["polar"]["status"]) for r in rows) == [
        ("fails", "ERROR"),
        ("fails", "ERROR"),
        ("slow", "TIMEOUT"),
        ("slow", "TIMEOUT"),
    ]
    for r in rows:
        assert r["_ng_failure_class"].startswith("polar_") and isinstance(r["error"], str) and r["error"]
        assert r["polar"]["group_size"] == 2
    assert (tmp_path / "out" / "rollouts.jsonl").read_text().strip() == ""


def write_failing_tasks(path: Path) -> None:
    """One session per failure kind: the harness exits 1 (ERROR), outlives its 3 s budget (TIMEOUT),
    and a task the control API refuses (400: the request has a field no TaskRequest has)."""
    shell = {"harness": "shell", "settings": {"command": "false"}}
    base = {"num_samples": 1, "timeout_seconds": 60, "evaluator": {"strategy": "session_completed"}}
    tasks = [
        {**base, "task_id": "fails", "instruction": "fail", "agent": shell},
        {**base, "task_id": "slow", "instruction": "slow", "timeout_seconds": 3,
         "agent": {**shell, "settings": {"command": "sleep 60"}}},
        {**base, "task_id": "refused", "instruction": "refused", "agent": {**shell, "not_a_field": 1}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))


# -- verifiers: its own env server and env client (the path prime-rl's orchestrator takes) -----


def test_verifiers_env_client_gets_each_failure_as_a_failed_rollout(polar_serve: dict[str, Any], tmp_path: Path) -> None:
    venv = ecosystem_venv("verifiers")
    write_failing_tasks(tmp_path / "tasks.jsonl")
    store = str(polar_serve["store"] / "store")
    started = time.monotonic()
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(ROOT / "test" / "support" / "vf-trace-check.py"), "serve-all",
         str(tmp_path / "tasks.jsonl"), store],
        cwd=tmp_path,
        env=env_of(
            POLAR_CONTROL_URL=polar_serve["proxy_url"], POLAR_CONTROL_TOKEN=polar_serve["token"], POLAR_STORE=store
        ),
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 150
    traces = {t["task"]: t for t in map(json.loads, done.stdout.splitlines())}
    assert sorted(traces) == ["fails", "refused", "slow"]
    assert not any(t["ok"] for t in traces.values())
    assert "the harness exited with code 1" in traces["fails"]["errors"][0]
    assert "exceeded its budget of 3s" in traces["slow"]["errors"][0]
    assert "control API 400: not a valid TaskRequest: agent.not_a_field" in traces["refused"]["errors"][0]


# -- TRL: its own GRPOTrainer.train() through the plug-in's rollout_func ------------------------


def test_trl_trains_through_groups_whose_sessions_all_failed_or_timed_out_and_stops_on_a_refused_task(
    polar_serve: dict[str, Any], tmp_path: Path
) -> None:
    trainer_module("trl", "pip install 'polar-rollouts[trl]'")
    from test_trl_plugin import make_trainer

    from polar_rollouts.client import ControlApiError
    from polar_rollouts.plugins.trl import polar_rollout_func

    write_failing_tasks(tmp_path / "tasks.jsonl")
    url, token = polar_serve["proxy_url"], polar_serve["token"]
    seen: list[dict[str, Any]] = []
    rollout = polar_rollout_func(url, token, tasks=tmp_path / "tasks.jsonl", sync_weights=False, timeout_s=60)

    def recording(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        out = rollout(prompts, trainer)
        seen.append(out)
        return out

    # Every session failed before a model call ("none left a trace" ended training before):
    # TRL gets its failure shape, a reward of None per row, and the step ends.
    trainer = make_trainer(tmp_path, recording, ["fail", "slow"], 1)
    trainer.train()
    [out] = seen
    assert out["polar_reward"] == [None] * 6
    assert out["env_mask"] == [[0]] * 6
    # A task the control API refuses ends training at once, with the reason.
    trainer = make_trainer(tmp_path, rollout, ["refused"], 1)
    with pytest.raises(ControlApiError, match="agent.not_a_field: unknown field"):
        trainer.train()

"""TRL's GRPOTrainer with the shipped rollout_func, through the distributed stack (issue 51 items 3, 4).

The stack (support/fleet-stack.ts): s3rver and local-aws-sqs; `polar proxy --jobs-queue` (Node)
and the Worker in workerd, both on one S3 store and both started on the dry-run policy; two
`polar runner` processes on the queue, runner 0's harnesses calling the Node proxy and runner 1's
the Worker. The trainer talks to the Node proxy only: it registers the real vLLM engine there
(`replace_replicas`), sets each step's version there (the weight sync's `set_policy_version`) and
submits its groups there; sessions run wherever SQS hands them, so their model calls go through
both proxies, which route and stamp by the set and version in the store.

Two optimizer steps, a fault in each, injected while a runner holds a session of the step that
has made a model call and has no result yet:
- step 0: the Node proxy restarts (SIGTERM, started again on its port), under runner 0's harness
  and under the trainer's polling. The trainer's polls and the harness's calls ask again (before,
  the first refused poll ended the run, and the harness's session ended ERROR: a failed row);
- step 1: that runner is SIGKILLed and started again: SQS hands its messages out again after the
  visibility timeout (5 s here), and each session it held is rerun as a new attempt whose calls
  alone make its trace (the killed attempt's calls stay in the store, in no trace).
Checked on every capture and row: the version is the step that sampled it, TRL's logprobs agree
with the engine's, every session of every group is one completed row made of every call of one
attempt, each once, and both proxies took calls.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import SUPPORT, node, trainer_module
from support.engine_lane import needs_engine_lane
from support.engine_stack import Stack, engine_stack, lowercase_task

from polar_rollouts import ControlClient
from polar_rollouts.experiment.stack import Watchdog
from polar_rollouts.store import S3Store

pytestmark = needs_engine_lane
STEPS = 2
GROUP = 2
MAX_TOKENS = 8
CALLS = 2  # two-turn-agent.mjs: two model calls a session
PROMPTS = ["Write a few words in lowercase letters only.", "Describe the sea using lowercase letters only."]


@dataclass
class Fleet:
    info: dict[str, Any]
    process: subprocess.Popen[str]
    engine: Stack
    watchdog: Watchdog

    @property
    def proxy_urls(self) -> list[str]:
        return list(self.info["proxy_urls"])

    def command(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        assert "error" not in answer, answer
        self.watchdog.guard(int(answer["pid"]))  # a new process group: the restarted one
        return answer

    def store(self) -> S3Store:
        import boto3
        from botocore.config import Config

        env = self.info["env"]
        client = boto3.client(
            "s3", endpoint_url=env["AWS_ENDPOINT_URL_S3"], region_name=env["AWS_REGION"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            config=Config(s3={"addressing_style": "path"}),
        )  # fmt: skip
        return S3Store(self.info["bucket"], self.info["prefix"], client=client)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    out = tmp_path_factory.mktemp("trl-fleet")
    # Whatever happens to this process, the stack's process groups (its own, with workerd; the
    # proxy's; each runner's, with its harnesses) are killed once it is gone.
    watchdog = Watchdog()
    with (out / "fleet-stack.log").open("w") as log:
        # The fleet comes up (node, workerd, two runners) while the engine loads.
        process = subprocess.Popen(
            [node(), str(SUPPORT / "fleet-stack.ts")], cwd=SUPPORT.parents[2],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True,
        )  # fmt: skip
    watchdog.guard(process.pid)
    try:
        with engine_stack(out, seed=1, run=1) as engine:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"fleet-stack.ts exited: {(out / 'fleet-stack.log').read_text()[-3000:]}")
            info = json.loads(line)
            for pid in [*info["runner_pids"], info["proxy_pid"]]:
                watchdog.guard(pid)
            yield Fleet(info, process, engine, watchdog)
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        watchdog.release()


def held_sessions(sessions_dir: str, runner_pid: int) -> set[str]:
    """The sessions a runner holds now: their dirs (`<session id>.<runner pid>.<k>`) exist from INIT
    to the end of POSTRUN (the evaluation, the result)."""
    try:
        names = os.listdir(sessions_dir)
    except FileNotFoundError:
        return set()
    out = set()
    for name in names:
        parts = name.rsplit(".", 2)
        if len(parts) == 3 and parts[1] == str(runner_pid):
            out.add(parts[0])
    return out


class Fault(threading.Thread):
    """Once armed (a step's groups are being submitted), waits for a session of that step held by
    a runner (``runners[0]`` first) that has made a model call (a capture is stored) and has no result yet,
    then either SIGKILLs that runner and starts it again (``kill``), or restarts the Node proxy,
    which runner 0's harnesses call and the trainer polls (``restart-proxy``)."""

    def __init__(self, fleet: Fleet, task_ids: list[str], first_task: int, action: str, runners: list[int]) -> None:
        super().__init__(daemon=True)
        self.fleet = fleet
        self.task_ids = task_ids  # the plug-in's list, appended as it submits
        self.first_task = first_task
        self.action = action
        self.runners = runners
        self.armed = threading.Event()
        self.done: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.armed.wait()
            store = self.fleet.store()
            pids, dirs = self.fleet.info["runner_pids"], self.fleet.info["sessions_dirs"]
            armed_at = time.monotonic()
            while time.monotonic() < armed_at + 120:
                tasks = self.task_ids[self.first_task : self.first_task + len(PROMPTS)]
                ours = {f"{t}-{i}": t for t in tasks for i in range(GROUP)}
                # The first runner listed is the one wanted; SQS may hand it no session of the
                # step, so after a few seconds the others' sessions do.
                for n in self.runners if time.monotonic() > armed_at + 8 else self.runners[:1]:
                    for sid in held_sessions(dirs[n], pids[n]) & ours.keys():
                        task = ours[sid]
                        if store.get(f"results/{task}/{sid}.json") is None and store.list(f"captures/{task}/{sid}/"):
                            self.done = {"action": self.action, "runner": n, "pid": pids[n], "session": sid}
                            if self.action == "kill":
                                os.kill(pids[n], signal.SIGKILL)
                                self.done["restarted"] = self.fleet.command(f"start-runner {n}")
                                pids[n] = self.done["restarted"]["pid"]
                            else:  # the calls it took before, as its /metrics restarts at 0
                                self.done["captured_before"] = captured(self.fleet.proxy_urls[0])
                                self.done["restarted"] = self.fleet.command("restart-proxy")
                            return
                time.sleep(0.1)
            raise AssertionError(f"{self.action}: no runner of {self.runners} held a session with a model call and no result")
        except BaseException as err:  # the test thread reports it
            self.error = err


def write_tasks(path: Path) -> list[str]:
    tasks = [lowercase_task(f"fleet-{i}", p, MAX_TOKENS) for i, p in enumerate(PROMPTS)]
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return PROMPTS


def captured(url: str) -> int:
    """The calls a proxy (this process or isolate) captured since it started: its /metrics."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as res:
        text = res.read().decode()
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines() if line.startswith("polar_proxy_captures_total{"))


def test_grpo_trainer_two_steps_through_the_fleet_with_a_proxy_restarted_and_a_runner_killed(fleet: Fleet, tmp_path: Path) -> None:
    trainer_module("trl", "pip install 'polar-rollouts[trl]'")
    from test_trl_plugin_engine import check_trl_agrees_with_engine, grpo_trainer

    from polar_rollouts.plugins.trl import polar_reward, polar_rollout_func

    engine, token = fleet.engine, fleet.info["control_token"]
    node_url, worker_url = fleet.proxy_urls
    # The trainer registers its engine through the Node proxy; the Worker routes by the same set.
    ControlClient(node_url, token).replace_replicas([engine.engine_url])
    assert [r["url"] for r in ControlClient(worker_url, token).replicas()] == [engine.engine_url]

    prompts = write_tasks(tmp_path / "tasks.jsonl")
    rollout = polar_rollout_func(
        node_url, token, tasks=tmp_path / "tasks.jsonl",
        engine_url=engine.engine_url, model_dir=engine.model_dir, timeout_s=180, poll_s=0.5,
    )  # fmt: skip
    # Step 0: the Node proxy restarts under a session of runner 0 (mid-call or between its calls)
    # and under the trainer's polling. Step 1: a runner holding a session is SIGKILLed.
    faults = [
        Fault(fleet, rollout.task_ids, 0, "restart-proxy", runners=[0, 1]),
        Fault(fleet, rollout.task_ids, len(prompts), "kill", runners=[1, 0]),
    ]
    for f in faults:
        f.start()
    batches: list[dict[str, Any]] = []

    def rollout_func(p: list[Any], t: Any) -> dict[str, Any]:
        faults[len(batches)].armed.set()
        batches.append(rollout(p, t))
        return batches[-1]

    trainer = grpo_trainer(engine, tmp_path / "out", rollout_func, prompts, STEPS)
    result = trainer.train()
    for f in faults:
        f.join(timeout=5)
        assert f.error is None, f.error
        assert f.done is not None
    assert result.global_step == STEPS

    check_trl_agrees_with_engine(trainer, STEPS)
    assert [s.version for s in rollout.syncs] == [str(k) for k in range(STEPS)]

    # Every session of every group is one completed row, sampled by this step's weights.
    store = fleet.store()
    reruns = stored = 0
    retried: list[str] = []
    failed: list[str] = []
    for step, batch in enumerate(batches):
        n = len(batch["prompt_ids"])
        assert n == GROUP * len(prompts) and all(len(v) == n for v in batch.values())
        assert batch["polar_policy_version"] == [str(step)] * n, batch["polar_policy_version"]
        assert batch["polar_status"] == ["COMPLETED"] * n, batch["polar_status"]
        assert all(r is not None for r in batch["polar_reward"])
        assert len(set(batch["polar_session_id"])) == n
        for task_id in dict.fromkeys(batch["polar_task_id"]):
            rows = [json.loads(line) for line in (store.get(f"trajectories/{task_id}.jsonl") or b"").splitlines()]
            sessions = {f"{task_id}-{i}" for i in range(GROUP)}
            assert {r["session_id"] for r in rows} == sessions
            assert len({(r["session_id"], r["trace_index"]) for r in rows}) == len(rows)
            for sid in sessions:
                res = json.loads(store.get(f"results/{task_id}/{sid}.json") or b"null")
                assert res["status"] == "COMPLETED"
                captures = [
                    json.loads(gzip.decompress(store.get(k) or b""))
                    for k in store.list(f"captures/{task_id}/{sid}/")
                ]
                by_id = {c["capture_id"]: c for c in captures}
                traces = res["trajectory"]["traces"]
                used = [cid for t in traces if not t["orphan"] for cid in t["capture_ids"]]
                orphans = {cid: t["orphan_reason"] for t in traces if t["orphan"] for cid in t["capture_ids"]}
                same = {k for k, c in by_id.items() if c["attempt"] == res["attempt"]}
                # Every call of the attempt that wrote the result, once; none of a killed attempt.
                assert len(used) == len(set(used)) == CALLS and set(used) <= same, (sid, traces, same)
                for k in same - set(used):
                    # A call the proxy's restart cut; the harness sent it again and the retry is the
                    # one trained. The cut one was captured as failed (in no trace), or whole with
                    # its answer lost on the way: then the same prompt as the retry, an orphan
                    # "retried" (docs/reconstruction.md "Orphans").
                    extra = by_id[k]
                    if extra.get("error") is not None:
                        assert k not in orphans, (sid, traces)
                    else:
                        assert extra["prompt_token_ids"] in [by_id[u]["prompt_token_ids"] for u in used], extra
                        assert orphans.get(k) == "retried", (sid, traces)
                    retried.append(f"{sid}: orphan {orphans.get(k)}, error {extra.get('error')}")
                reruns += res["attempt"] > 0
                stored += len(captures)
                for c in captures:
                    assert c["policy_version"] == str(step), c
                    if c["error"] is not None:  # sampled nothing (a call the restart cut)
                        failed.append(f"{sid}: {c['error']}")
                        continue
                    # The version that sampled it: the engine's, or the trainer's step with the reason.
                    assert c["policy_version_source"] == "engine" or (
                        c["policy_version_source"] == "trainer" and c.get("policy_version_note")
                    ), c
                    assert c["replica"] == engine.engine_url, c
    # The killed session was rerun, and the calls its killed attempt made are in the store but in
    # no trace (the check above: a trace holds exactly the calls of the result's attempt).
    killer = faults[1]
    assert killer.done is not None
    sid = killer.done["session"]
    task_id = sid.rsplit("-", 1)[0]
    killed = json.loads(store.get(f"results/{task_id}/{sid}.json") or b"null")
    attempts = [json.loads(gzip.decompress(store.get(k) or b""))["attempt"] for k in store.list(f"captures/{task_id}/{sid}/")]
    assert killed["attempt"] > 0 and min(attempts) < killed["attempt"], (killer.done, attempts)
    assert reruns >= 1, killer.done

    # Both proxies took model calls (each capture above names the engine the trainer registered
    # through the Node proxy), and every call either counted is in the store. (At most: the old
    # Node proxy may have captured a call after its /metrics was read, just before the restart.)
    through = {"node": faults[0].done["captured_before"] + captured(node_url), "worker": captured(worker_url)}
    assert through["node"] > 0 and through["worker"] > 0, through
    assert sum(through.values()) <= stored, (through, stored)
    print(f"fleet: {[f.done for f in faults]}; {reruns} session(s) rerun; calls retried after the restart {retried}; failed calls {failed}; captures through {through}")

"""plugins/task_group.py against `polar serve` (dry-run policy): the rows of one trainer group become
one Polar task, whether the group's size is known (slime) or found from the rows started
together (verl); and the refusals. The trainer-side proofs are test_verl_plugin.py and
test_slime_plugin.py (the latter needs a slime clone, so this runs the sized mode in CI too)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from polar_rollouts import ControlClient
from polar_rollouts.plugins.task_group import PluginError, TaskGroups, task_for, with_trainer_sampling

PRIMES = json.loads(
    next(line for line in (ROOT / "examples" / "grpo-tasks.jsonl").read_text().splitlines() if '"first-primes"' in line)
)


def groups(polar_serve: dict[str, Any], timeout_s: float = 120) -> TaskGroups:
    return TaskGroups(ControlClient(polar_serve["proxy_url"], polar_serve["token"]), prefix="t", timeout_s=timeout_s, poll_s=0.2)


@pytest.mark.parametrize("size", [3, None], ids=["sized", "started-together"])
def test_rows_of_a_group_share_one_task_and_get_distinct_sessions(polar_serve: dict[str, Any], size: int | None) -> None:
    g = groups(polar_serve)

    async def rows() -> list[Any]:
        # Two groups interleaved, as a trainer starts a batch.
        return list(await asyncio.gather(*(g.session(key, PRIMES, size=size) for key in ["a", "b", "a", "b", "a", "b"])))

    got = asyncio.run(rows())
    for key_rows in (got[0::2], got[1::2]):
        assert len({task_id for task_id, _, _ in key_rows}) == 1 and {n for _, _, n in key_rows} == {3}
        sessions = [traces[0].session_id for _, traces, _ in key_rows]
        assert sorted(sessions) == [f"{key_rows[0][0]}-{i}" for i in range(3)]
        # The dry-run script's alternatives: sample i follows alternative i, so rewards differ.
        assert sorted(traces[0].reward for _, traces, _ in key_rows) == pytest.approx([0.0, 2 / 3, 1.0])
    assert got[0][0] != got[1][0]
    # The same key again (a new step) is a new task, never the old sessions.
    again = asyncio.run(rows())
    assert {t for t, _, _ in again}.isdisjoint({t for t, _, _ in got})


def test_a_sized_group_waits_for_a_late_row(polar_serve: dict[str, Any]) -> None:
    """slime's semaphore can hold a sample back: with the size known, a late row still joins."""
    g = groups(polar_serve)

    async def late() -> Any:
        await asyncio.sleep(0.2)
        return await g.session("late", PRIMES, size=3)

    async def rows() -> list[Any]:
        return list(await asyncio.gather(g.session("late", PRIMES, size=3), g.session("late", PRIMES, size=3), late()))

    got = asyncio.run(rows())
    assert len({t for t, _, _ in got}) == 1 and len({traces[0].session_id for _, traces, _ in got}) == 3


def test_refusals(polar_serve: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = groups(polar_serve, timeout_s=0.5)

    async def short_group() -> Any:
        return await asyncio.gather(g.session("k", PRIMES, size=3), g.session("k", PRIMES, size=3))

    with pytest.raises(PluginError, match="2 of 3 rows came in 0.5s"):
        asyncio.run(short_group())

    async def mixed() -> Any:
        return await asyncio.gather(g.session("m", PRIMES), g.session("m", {**PRIMES, "instruction": "other"}))

    with pytest.raises(PluginError, match="rows of group m name different Polar tasks"):
        asyncio.run(mixed())
    with pytest.raises(PluginError, match="names no Polar task"):
        task_for({}, None, where="row 1")
    with pytest.raises(PluginError, match=r"needs a task file: set \$POLAR_TASKS"):
        task_for({"polar_task_id": "x"}, None, where="row 1")
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(PRIMES) + "\n")
    assert task_for({"polar_task_id": "first-primes"}, str(path), where="row 1")["instruction"] == PRIMES["instruction"]
    with pytest.raises(PluginError, match="'nope' is not a task_id of"):
        task_for({"polar_task_id": "nope"}, str(path), where="row 1")
    # A row is data: a whole task from it (its own judge, commands, limits) only when the operator
    # says the rows are theirs.
    hostile = {"polar_task": {**PRIMES, "evaluator": {"strategy": "test_on_output", "config": {"command": "true"}}}}
    monkeypatch.delenv("POLAR_ROW_TASKS", raising=False)
    with pytest.raises(PluginError, match=r"carries a whole task request \(polar_task\).*POLAR_ROW_TASKS=1"):
        task_for(hostile, None, where="row 1")
    monkeypatch.setenv("POLAR_ROW_TASKS", "1")
    assert task_for(hostile, None, where="row 1")["evaluator"]["config"] == {"command": "true"}
    with pytest.raises(PluginError, match="needs an instruction"):
        task_for({"polar_task": {"task_id": "x"}}, None, where="row 1")
    hot = {**PRIMES, "agent": {**PRIMES["agent"], "sampling": {"top_p": 0.5}}}
    with pytest.raises(PluginError, match=r"agent.sampling.top_p=0.5 differs from the trainer's 0.9"):
        with_trainer_sampling(hot, {"top_p": 0.9}, None, where="row 1")
    merged = with_trainer_sampling(hot, {"top_p": 0.5, "temperature": 0.7, "top_k": -1}, 64, where="row 1")
    assert merged["agent"]["sampling"] == {"top_p": 0.5, "temperature": 0.7, "max_tokens": 64}

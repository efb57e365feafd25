"""examples/rl_on_cpu.py, short: real vLLM on CPU + `polar serve` + GRPO, both modes.

Asserts the faithfulness of the loop, not its learning margin (README "RL on one CPU machine"):
every capture carries the version that sampled it, a call that spanned a weight sync says so,
masks cover exactly the two sampled turns, the trainer's recomputed logprobs equal the captured
ones, and stale samples are counted as the shard's versions say. Skipped (with the reason) where
the engine lane is not set up (`bash scripts/engine.sh setup`), except under CI.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from conftest import ROOT
from support.engine_lane import needs_engine_lane

from polar_rollouts import read_shard

pytestmark = needs_engine_lane
MAX_TOKENS = 8
FIELDS = {
    "iteration", "policy_version", "mean_reward", "rewards", "samples", "trainable_tokens",
    "stale_samples", "logprob_diff_mean", "logprob_diff_max", "wall_s",
}  # fmt: skip


def run_example(out: Path, mode: str, iterations: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "rl_on_cpu.py"), "--out", str(out), "--iterations", str(iterations),
         "--seed", "1", "--mode", mode, "--groups", "1", "--group-size", "4", "--max-tokens", str(MAX_TOKENS)],
        capture_output=True, text=True, timeout=420, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    rows = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(iterations))
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return rows


def check_store(out: Path, rows: list[dict[str, Any]]) -> None:
    store = out / "store"
    captures = [json.loads(gzip.decompress(p.read_bytes())) for p in (store / "captures").rglob("*.json.gz")]
    assert len(captures) == 2 * 4 * len(rows)  # two calls per session
    for c in captures:
        # vLLM's /weight_info, read by the proxy; when a read failed under load, the step the trainer
        # also set through the control API, with the reason (docs/engines.md "Versions under load").
        assert c["policy_version_source"] == "engine" or (
            c["policy_version_source"] == "trainer" and c.get("policy_version_note")
        ), c
        assert c["policy_version"] is not None and c["policy_version_end"] is not None, c["capture_id"]
        assert int(c["policy_version_end"]) - int(c["policy_version"]) in (0, 1), c["capture_id"]
    assert sorted(c["tito"] for c in captures).count("spliced") == 4 * len(rows)
    # The example reports each one it saw, not silently.
    not_engine = sum(c["policy_version_source"] != "engine" for c in captures)
    assert sum(r["captures_not_versioned_by_engine"] for r in rows) == not_engine

    tasks = sorted(p.stem for p in (store / "trajectories").glob("*.parquet"))
    assert len(tasks) == len(rows)
    for row, task in zip(rows, tasks):
        assert FIELDS <= row.keys()
        traces = read_shard(str(store), task)
        assert len(traces) == row["samples"] == 4
        versions = [int(t.policy_version) for t in traces]  # the shard's versions, not the loop's
        assert row["policy_version"] == min(versions)
        assert row["stale_samples"] == sum(v < row["trained_version"] for v in versions)
        assert row["crossed_samples"] == sum(t.policy_version != t.policy_version_end for t in traces)
        assert row["crossed_samples"] == sum(t.crossed_weight_update for t in traces)
        assert row["trainable_tokens"] == sum(int(t.loss_mask.sum()) for t in traces)
        for t in traces:
            m = t.loss_mask.astype(bool)
            runs = np.flatnonzero(np.diff(np.concatenate([[0], m.astype(np.int8), [0]])))
            lengths = runs[1::2] - runs[::2]
            assert len(lengths) == 2 and all(0 < n <= MAX_TOKENS for n in lengths), (t.session_id, lengths)
            assert t.response_logprobs is not None
            assert np.array_equal(t.response_logprobs != 0, m), t.session_id  # a logprob on every sampled token
        # Every sampled token of a turn one version sampled is checked, in a trace that crossed a
        # sync too (turn by turn); only a turn the sync landed inside has no version to check.
        one_version = [
            int(t.loss_mask[s.start : s.end].sum()) for t in traces for s in t.version_spans
            if s.version_start is not None and s.version_start == s.version_end
        ]  # fmt: skip
        assert all(len(t.version_spans) == 2 for t in traces)
        assert row["checked_tokens"] == sum(one_version) > 0, row
        assert row["logprob_diff_max"] < 1e-4, row  # float32 engine and trainer: ~1e-6


def test_sync_mode(tmp_path: Path) -> None:
    rows = run_example(tmp_path / "sync", "sync", 2)
    assert [r["policy_version"] for r in rows] == [0, 1]
    assert all(r["stale_samples"] == 0 and r["crossed_samples"] == 0 for r in rows)
    check_store(tmp_path / "sync", rows)


def test_one_step_off_policy_mode(tmp_path: Path) -> None:
    rows = run_example(tmp_path / "off", "one-step-off", 3)
    # Iteration 0 is sampled by v0 and trained at v0; each later one was submitted while the step
    # before it ran, so it is sampled by the previous version (or crossed the sync) and is stale.
    assert rows[0]["stale_samples"] == 0 and rows[0]["policy_version"] == 0
    for i, r in enumerate(rows[1:], start=1):
        assert r["trained_version"] == i
        assert r["policy_version"] == i - 1
        assert r["stale_samples"] + r.get("dropped_stale", 0) > 0
    check_store(tmp_path / "off", rows)

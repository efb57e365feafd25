"""Reads a vf-eval run's traces.jsonl with verifiers' own reader (`read_episodes`, traces typed
as `vf.WireTrace`, the trainer's loader) and prints, per trace, what prime-rl would train on
beside the Polar shard row of the same session.
Usage: python vf-trace-check.py RUN_DIR STORE_DIR -> one JSON line per trace."""

import json
import sys
from pathlib import Path

import verifiers.v1 as vf
from verifiers.v1.utils.trace_store import read_episodes

run_dir, store = Path(sys.argv[1]), Path(sys.argv[2])
for trace in (t for episode in read_episodes(run_dir, vf.WireTrace) for t in episode.traces):
    polar = trace.info["polar"]
    shard = [
        json.loads(row)
        for row in (store / "trajectories" / f"{polar['task_id']}.jsonl").read_text().splitlines()
        if row.strip()
    ]
    branches = trace.branches
    print(
        json.dumps(
            {
                "task": trace.task.data.name,
                "ok": trace.ok,
                "reward": trace.reward,
                "polar": polar,
                "calls": len(trace.calls),
                "branches": [
                    {"token_ids": b.token_ids, "sampled_mask": b.sampled_mask, "logprobs": b.logprobs} for b in branches
                ],
                "shard": shard,
            }
        )
    )

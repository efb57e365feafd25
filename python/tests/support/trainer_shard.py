"""The checked-in trainer shard (fixtures/trainer-shard, made by its make.sh from a real `polar run`)
and the advantages Polar's session rule gives it.

tools: sessions tools-0..3, one trace each, tool output inside the response (mask 0); rewards
  1, 1, 0 and none (tools-3 was never scored). Dropping tools-3, the group's session rewards are
  (1, 1, 0): mean 2/3, std (n-1) sqrt(1/3), so advantages 0.577, 0.577, -1.155.
split: sessions split-0..2, two traces each (per_request builder); rewards 1, 0, 0 per session.
  Counting each session once: mean 1/3, std sqrt(1/3): 1.155 for both split-0 traces, -0.577
  for the four others. Counting rows (6 rows, two 1s): mean 1/3, std sqrt(4/15): 1.291 and -0.646.
"""

from __future__ import annotations

import math

import numpy as np
from pathlib import Path

from polar_rollouts import Trace, filter_traces, read_shard_file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "trainer-shard"
PAD = 151643

S3 = math.sqrt(1 / 3)
# Per session (each session's traces share its reward): Polar's session rule.
POLAR_ADVANTAGE = {
    "tools-0": (1 - 2 / 3) / S3,  # 0.577
    "tools-1": (1 - 2 / 3) / S3,
    "tools-2": (0 - 2 / 3) / S3,  # -1.155
    "split-0": (1 - 1 / 3) / S3,  # 1.155
    "split-1": (0 - 1 / 3) / S3,  # -0.577
    "split-2": (0 - 1 / 3) / S3,
}
ROW_STD = math.sqrt(4 / 15)
# What a trainer that counts traces instead of sessions gives the split group.
PER_ROW_ADVANTAGE = {"split-0": (1 - 1 / 3) / ROW_STD, "split-1": -(1 / 3) / ROW_STD, "split-2": -(1 / 3) / ROW_STD}


def shard_traces() -> list[Trace]:
    """Every row of both shards, the unscored tools-3 included."""
    return [t for name in ("tools", "split") for t in read_shard_file(FIXTURE / f"{name}.parquet")]


def scored_traces() -> list[Trace]:
    """What a trainer gets after the default filter: tools-3 (no reward) dropped."""
    traces = shard_traces()
    kept = filter_traces(traces)
    assert [t.session_id for t in traces if t not in kept] == ["tools-3"]
    return kept


def tool_output_positions(trace: Trace) -> list[int]:
    """Response positions of inserted (mask 0) tokens that are followed by sampled ones."""
    last_sampled = max(i for i, m in enumerate(trace.loss_mask) if m == 1)
    return [i for i, m in enumerate(trace.loss_mask) if m == 0 and i < last_sampled]


def with_distinct_samples(traces: list[Trace]) -> list[Trace]:
    """The dry-run policy samples every session of a task token for token; a real policy does not.
    Each session's first sampled token is made its own, so a trainer that groups by the whole
    sequence (instead of the prompt) sees every sample alone."""
    for t in traces:
        first = int(np.flatnonzero(t.loss_mask)[0])
        t.response_ids = t.response_ids.copy()
        t.response_ids[first] = 1000 + t.sample_index
    return traces

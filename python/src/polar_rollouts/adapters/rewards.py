"""The reward an adapter hands a trainer: the shard's, or a refusal naming the trace.

A trace without a reward (a session nobody scored) must never reach a trainer as 0.0: that is
a made-up score, and it drags its group's mean. Drop such traces with ``filter_traces`` (its
default ``TraceFilter.require_reward``) and count them there.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..trace import Trace


class MissingRewardError(ValueError):
    """A trace reached an adapter without a reward."""


def require_rewards(traces: Sequence[Trace]) -> list[float]:
    missing = [f"{t.session_id} trace {t.trace_index}" for t in traces if t.reward is None]
    if missing:
        raise MissingRewardError(
            f"{len(missing)} trace(s) have no reward ({', '.join(missing[:5])}"
            f"{', ...' if len(missing) > 5 else ''}); drop them with filter_traces first"
        )
    return [float(t.reward) for t in traces if t.reward is not None]

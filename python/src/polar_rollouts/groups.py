"""GRPO groups, filters (status, orphans, staleness) and group-normalized advantages."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .trace import Trace


def group_by(traces: Iterable[Trace], key: Callable[[Trace], str] = lambda t: t.group_id) -> dict[str, list[Trace]]:
    """Traces by ``group_id`` (every sample of one prompt), in first-seen order."""
    groups: dict[str, list[Trace]] = {}
    for trace in traces:
        groups.setdefault(key(trace), []).append(trace)
    return groups


def staleness(trace: Trace, current_version: int) -> int | None:
    """How many policy versions behind ``current_version`` the oldest token of the trace is.

    None when the trace carries no integer version (the dry-run policy and engines without a
    weight-version header record none).
    """
    versions = [trace.policy_version, *(s.version_start for s in trace.version_spans)]
    numbers = [int(v) for v in versions if v is not None and v.lstrip("-").isdigit()]
    return current_version - min(numbers) if numbers else None


@dataclass(frozen=True)
class TraceFilter:
    """What a trainer keeps. The defaults keep completed, non-orphan traces with a reward."""

    statuses: Collection[str] = ("COMPLETED",)
    include_orphans: bool = False
    require_reward: bool = True
    require_logprobs: bool = False
    drop_crossed_weight_update: bool = False
    drop_capture_gaps: bool = False
    current_version: int | None = None
    max_staleness: int | None = None
    # A trace with no integer version is kept unless this is set (its staleness is unknown).
    drop_unknown_version: bool = False

    def keep(self, trace: Trace) -> bool:
        if trace.status not in self.statuses:
            return False
        if trace.orphan and not self.include_orphans:
            return False
        if self.require_reward and trace.reward is None:
            return False
        if self.require_logprobs and trace.response_logprobs is None:
            return False
        if self.drop_crossed_weight_update and trace.crossed_weight_update:
            return False
        if self.drop_capture_gaps and trace.capture_gaps > 0:
            return False
        if self.max_staleness is not None:
            if self.current_version is None:
                raise ValueError("max_staleness needs current_version")
            lag = staleness(trace, self.current_version)
            if lag is None:
                return not self.drop_unknown_version
            if lag > self.max_staleness:
                return False
        return True


def filter_traces(traces: Iterable[Trace], flt: TraceFilter | None = None) -> list[Trace]:
    flt = flt or TraceFilter()
    return [t for t in traces if flt.keep(t)]


def grpo_advantages(
    traces: Iterable[Trace], *, eps: float = 1e-6, normalize_std: bool = True
) -> npt.NDArray[np.float32]:
    """One advantage per trace: its reward minus its group's mean reward, divided by the group's
    standard deviation (GRPO; ``normalize_std=False`` gives Dr. GRPO's mean-only form).

    The group's statistics count each session once (the mean of its traces' rewards), so a
    session split into several traces (``per_request``, a compaction) does not weigh more than
    one that was not. A trace without a reward gets 0 and counts nowhere. A group whose sessions
    all scored the same, or that has one session, gets 0 everywhere: it carries no signal.
    """
    items = list(traces)
    return session_grpo_advantages(
        [t.group_id for t in items],
        [t.session_id for t in items],
        [t.reward for t in items],
        eps=eps,
        normalize_std=normalize_std,
    )


def session_grpo_advantages(
    groups: Sequence[str],
    sessions: Sequence[str],
    rewards: Sequence[float | None] | npt.NDArray[np.float64],
    *,
    eps: float = 1e-6,
    normalize_std: bool = True,
) -> npt.NDArray[np.float32]:
    """``grpo_advantages`` on parallel lists (one entry per trace), for trainer hooks that see
    columns rather than ``Trace`` objects (verl's estimator, slime's reward post-processing)."""
    out = np.zeros(len(groups), dtype=np.float32)
    by_group: dict[str, dict[str, list[float]]] = {}
    for g, s, r in zip(groups, sessions, rewards, strict=True):
        if r is not None:
            by_group.setdefault(g, {}).setdefault(s, []).append(float(r))
    stats: dict[str, tuple[float, float]] = {}
    for group_id, by_session in by_group.items():
        means = np.array([np.mean(r) for r in by_session.values()], dtype=np.float64)
        # Bessel-corrected, like torch.std (verl, TRL); one session has no spread.
        std = float(means.std(ddof=1)) if len(means) > 1 else 0.0
        stats[group_id] = (float(means.mean()), std)
    for i, (g, r) in enumerate(zip(groups, rewards, strict=True)):
        if r is None:
            continue
        mean, std = stats[g]
        if std == 0.0:
            continue
        centered = float(r) - mean
        out[i] = centered / (std + eps) if normalize_std else centered
    return out

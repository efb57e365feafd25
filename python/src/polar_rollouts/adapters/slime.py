"""slime: ``slime.utils.types.Sample`` dicts (the shape ``Sample.from_dict`` takes) and the reward
post-processing hook that normalises them by Polar's groups and sessions.

Checked against THUDM/slime at 624b824a (``slime/utils/types.py``, ``slime/ray/rollout.py``,
``slime/backends/megatron_utils/cp_utils.py``). ``tokens`` is prompt + response,
``response_length`` counts the response, ``loss_mask`` and ``rollout_log_probs`` cover the
response only. slime's own reward normalisation groups samples by position
(``n_samples_per_prompt`` in a row; the whole batch when the count does not match) and never
reads ``group_index``; ``post_process_rewards`` below groups by Polar's ``group_id`` and counts
each session once. ``rollout_id`` is one number per session: slime's loss then averages a
session's traces as one rollout instead of counting each trace as its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..groups import group_by, session_grpo_advantages
from ..trace import Trace
from .behaviour_logprobs import RawLogprobs, behaviour_logprobs
from .rewards import require_rewards

# slime's estimators that normalise rewards per group (RolloutManager._post_process_rewards).
GROUP_NORMALISED = ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline")
STD_NORMALISED = ("grpo", "gspo", "cispo")


def slime_status(trace: Trace) -> str:
    """Polar's session status and finish reason as a ``Sample.Status`` value."""
    if trace.status == "ERROR":
        return "failed"
    if trace.status == "TIMEOUT":
        return "aborted"
    if trace.finish_reason == "length":
        return "truncated"
    return "completed"


def to_slime_sample(
    trace: Trace,
    *,
    group_index: int,
    index: int,
    rollout_id: int,
    rollout_logprobs: bool = True,
    raw_logprobs: RawLogprobs = "refuse",
) -> dict[str, Any]:
    require_rewards([trace])
    logprobs = behaviour_logprobs(trace, raw_logprobs=raw_logprobs).tolist() if rollout_logprobs else None
    return {
        "group_index": group_index,
        "index": index,
        "rollout_id": rollout_id,
        "tokens": trace.input_ids.tolist(),
        "response_length": len(trace.response_ids),
        "reward": trace.reward,
        "loss_mask": trace.loss_mask.astype(int).tolist(),
        "rollout_log_probs": logprobs,
        "weight_versions": [v for v in (trace.policy_version, trace.policy_version_end) if v is not None],
        "status": slime_status(trace),
        "session_id": trace.session_id,
        "metadata": {
            "polar": {
                "task_id": trace.task_id,
                "group_id": trace.group_id,
                "session_id": trace.session_id,
                "trace_index": trace.trace_index,
                "orphan": trace.orphan,
                "orphan_reason": trace.orphan_reason,
                "break_reason": trace.break_reason,
                "crossed_weight_update": trace.crossed_weight_update,
                "capture_gaps": trace.capture_gaps,
                # slime's Sample has one reward per sample (no per-token field), so process
                # rewards ride here, response-relative, for a custom advantage or loss function.
                "step_rewards": (
                    None
                    if trace.step_rewards is None
                    else [{"start": s.start, "end": s.end, "reward": s.reward} for s in trace.step_rewards]
                ),
            }
        },
    }


# slime's loss averages per ``rollout_id`` over the whole training batch (``rollout_mask_sums``),
# and a batch is often built from several calls (one group at a time, as slime's
# ``list[list[Sample]]`` invites): numbers restarting at 0 on each call would merge sessions of
# different groups. So every call draws from these process-wide counters.
_next_group = itertools.count()
_next_rollout = itertools.count()
_next_index = itertools.count()


def to_slime_samples(traces: Sequence[Trace], **kwargs: Any) -> list[dict[str, Any]]:
    """One dict per trace, a group's traces next to each other (first-seen group order);
    ``group_index`` numbers the groups, ``rollout_id`` the sessions, ``index`` the samples, each
    unique across calls in this process (so samples of several calls can be concatenated). A trace
    without a reward (or logprobs, unless ``rollout_logprobs=False``) is refused by name."""
    require_rewards(traces)
    ordered = [t for group in group_by(traces).values() for t in group]
    groups = {gid: next(_next_group) for gid in group_by(ordered)}
    sessions = {sid: next(_next_rollout) for sid in dict.fromkeys(t.session_id for t in ordered)}
    return [
        to_slime_sample(
            t, group_index=groups[t.group_id], index=next(_next_index), rollout_id=sessions[t.session_id], **kwargs
        )
        for t in ordered
    ]


def post_process_rewards(args: Any, samples: Sequence[Any]) -> tuple[list[float], list[float]]:
    """slime's ``--custom-reward-post-process-path polar_rollouts.adapters.slime.post_process_rewards``:
    ``(raw_rewards, rewards)`` as ``RolloutManager._post_process_rewards`` returns them, with the
    groups taken from Polar's ``group_id`` and each session counted once, under the same switches
    (``advantage_estimator``, ``rewards_normalization``, ``grpo_std_normalization``)."""
    raw = [float(s.get_reward_value(args)) for s in samples]
    if args.advantage_estimator not in GROUP_NORMALISED or not args.rewards_normalization:
        return raw, raw
    polar = []
    for s in samples:
        meta = (s.metadata or {}).get("polar")
        if meta is None:
            raise ValueError(f"sample {s.index} has no metadata['polar']: build samples with to_slime_samples")
        polar.append(meta)
    advantages = session_grpo_advantages(
        [m["group_id"] for m in polar],
        [m["session_id"] for m in polar],
        raw,
        normalize_std=args.advantage_estimator in STD_NORMALISED and bool(args.grpo_std_normalization),
    )
    return raw, advantages.tolist()

"""One trainable sample (a shard row) as numpy arrays, with the trace fields newer shards add."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

STATUSES = ("COMPLETED", "TIMEOUT", "ERROR")


class ShardFormatError(ValueError):
    """A shard row or result that does not have the fields Polar writes."""


@dataclass(frozen=True)
class VersionSpan:
    """Response tokens ``[start, end)`` sampled while the policy went from one version to another."""

    start: int
    end: int
    version_start: str | None
    version_end: str | None


@dataclass(frozen=True)
class StepReward:
    """A process reward for one sampled turn: response tokens ``[start, end)`` and its reward."""

    start: int
    end: int
    reward: float


@dataclass
class Trace:
    """A row of ``trajectories/{task}.parquet``: one trace of one session.

    ``loss_mask`` and ``response_logprobs`` are aligned to ``response_ids``; mask 1 marks tokens the
    policy sampled, 0 the context a harness or template inserted. The fields after ``metadata``
    come from the reconstruction's engine-faithfulness columns; shards written before them get
    the defaults below (not an orphan, no weight update crossed, no gaps).
    """

    task_id: str
    session_id: str
    sample_index: int
    trace_index: int
    group_id: str
    status: str
    reward: float | None
    finish_reason: str | None
    prompt_ids: npt.NDArray[np.int64]
    response_ids: npt.NDArray[np.int64]
    loss_mask: npt.NDArray[np.int8]
    response_logprobs: npt.NDArray[np.float32] | None
    policy_version: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    orphan: bool = False
    orphan_reason: str | None = None
    break_reason: str | None = None
    parent_trace: int | None = None
    # A sub-agent's spawning tool call in the parent trace (e.g. Claude Code's Agent tool_use id).
    parent_tool_call_id: str | None = None
    crossed_weight_update: bool = False
    capture_gaps: int = 0
    version_spans: list[VersionSpan] = field(default_factory=list)
    policy_version_end: str | None = None
    # Per-turn process rewards beside ``reward`` (None: the evaluator gave none, or an older shard).
    step_rewards: list[StepReward] | None = None
    # SHA-256 of each image in the token sequence, engine order (``polar_rollouts.images`` reads them).
    image_hashes: list[str] = field(default_factory=list)
    # Set by the adapters' image reading (``polar_rollouts.images``) when this trace's images do not
    # load within bounds; such a trace is left out of the batch. Not a shard column.
    image_error: str | None = None

    @property
    def input_ids(self) -> npt.NDArray[np.int64]:
        """Prompt then response: the sequence a trainer's forward pass sees."""
        return np.concatenate([self.prompt_ids, self.response_ids])

    @property
    def trainable_tokens(self) -> int:
        return int(self.loss_mask.sum())

    @property
    def last_version(self) -> str | None:
        """The newest policy version that sampled any of this trace's tokens."""
        if self.policy_version_end is not None:
            return self.policy_version_end
        ends = [s.version_end for s in self.version_spans if s.version_end is not None]
        return ends[-1] if ends else self.policy_version

    def step_reward_tokens(self) -> npt.NDArray[np.float32]:
        """The step rewards per response token: each at its turn's last token, 0 elsewhere."""
        scores = np.zeros(len(self.response_ids), dtype=np.float32)
        for step in self.step_rewards or []:
            if step.end > step.start:
                scores[step.end - 1] += step.reward
        return scores

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Trace:
        """A shard row (Parquet or JSONL) to a Trace; checks the arrays line up."""
        try:
            trace = cls(
                task_id=str(row["task_id"]),
                session_id=str(row["session_id"]),
                sample_index=int(row["sample_index"]),
                trace_index=int(row["trace_index"]),
                group_id=str(row["group_id"]),
                status=str(row["status"]),
                reward=_opt_float(row.get("reward")),
                finish_reason=row.get("finish_reason"),
                prompt_ids=np.asarray(row["prompt_ids"], dtype=np.int64),
                response_ids=np.asarray(row["response_ids"], dtype=np.int64),
                loss_mask=np.asarray(row["loss_mask"], dtype=np.int8),
                response_logprobs=_opt_floats(row.get("response_logprobs")),
                policy_version=row.get("policy_version"),
                metadata=_json_object(row.get("metadata")),
                **_faithfulness_fields(row),
            )
        except KeyError as err:
            raise ShardFormatError(f"shard row lacks the column {err.args[0]!r}") from None
        trace.check()
        return trace

    def check(self) -> None:
        """Raises ShardFormatError when mask or logprobs do not line up with the response."""
        n = len(self.response_ids)
        where = f"{self.session_id} trace {self.trace_index}"
        if len(self.loss_mask) != n:
            raise ShardFormatError(f"{where}: loss_mask has {len(self.loss_mask)} entries for {n} response tokens")
        if self.response_logprobs is not None and len(self.response_logprobs) != n:
            raise ShardFormatError(
                f"{where}: response_logprobs has {len(self.response_logprobs)} entries for {n} response tokens"
            )
        if not np.isin(self.loss_mask, (0, 1)).all():
            raise ShardFormatError(f"{where}: loss_mask holds values other than 0 and 1")
        if self.status not in STATUSES:
            raise ShardFormatError(f"{where}: unknown status {self.status!r}")
        for span in self.version_spans:
            if not 0 <= span.start <= span.end <= n:
                raise ShardFormatError(f"{where}: version span [{span.start}, {span.end}) outside the response")
        for step in self.step_rewards or []:
            if not 0 <= step.start <= step.end <= n:
                raise ShardFormatError(f"{where}: step reward span [{step.start}, {step.end}) outside the response")


def _faithfulness_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """The columns added for engine faithfulness, each defaulted when the shard predates it."""
    spans = row.get("version_spans")
    if isinstance(spans, str):
        spans = json.loads(spans)
    parent = row.get("parent_trace")
    return {
        "orphan": bool(row.get("orphan") or False),
        "orphan_reason": row.get("orphan_reason"),
        "break_reason": row.get("break_reason"),
        "parent_trace": None if parent is None else int(parent),
        "parent_tool_call_id": row.get("parent_tool_call_id"),
        "crossed_weight_update": bool(row.get("crossed_weight_update") or False),
        "capture_gaps": int(row.get("capture_gaps") or 0),
        "version_spans": [
            VersionSpan(
                start=int(s["start"]),
                end=int(s["end"]),
                version_start=s.get("version_start"),
                version_end=s.get("version_end"),
            )
            for s in (spans or [])
        ],
        "policy_version_end": row.get("policy_version_end"),
        "step_rewards": _step_rewards(row.get("step_rewards")),
        "image_hashes": [str(h) for h in (row.get("image_hashes") or [])],
    }


def _step_rewards(value: Any) -> list[StepReward] | None:
    """The ``step_rewards`` column (JSON text of ``[{start, end, reward}]``); None when absent."""
    if value is None:
        return None
    if isinstance(value, str):
        value = json.loads(value)
    return [StepReward(start=int(s["start"]), end=int(s["end"]), reward=float(s["reward"])) for s in value]


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_floats(value: Any) -> npt.NDArray[np.float32] | None:
    return None if value is None else np.asarray(value, dtype=np.float32)


def _json_object(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ShardFormatError("metadata is not a JSON object")
    return value

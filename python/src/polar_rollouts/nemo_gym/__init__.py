"""Polar as a NeMo Gym agent server (docs/trainers.md "NeMo Gym"): each row NeMo Gym's rollout
collection sends to ``/run`` becomes one session of the Polar task its repeats share (one group,
one group id), answered with its reward and each model call's token ids and logprobs. Run it with ``python -m polar_rollouts.nemo_gym`` (or
``polar-nemo-gym``). Standard library only, like the control client it drives."""

from .response import verify_response
from .rows import DEFAULT_ROW_FIELDS, RowError, instruction_of, task_for_row
from .server import PolarAgent, aggregate_metrics, make_server

__all__ = ["DEFAULT_ROW_FIELDS", "PolarAgent", "RowError", "aggregate_metrics", "instruction_of", "make_server", "task_for_row", "verify_response"]

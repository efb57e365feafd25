"""Polar as a verifiers environment (verifiers 0.4.0; docs/trainers.md "verifiers"): a taskset
of Polar TaskRequests and a harness whose rollouts are Polar sessions. Needs the `verifiers`
package; load it by taskset id ``polar-verifiers`` (the top-level ``polar_verifiers`` module)."""

from .harness import PolarHarness, PolarHarnessConfig, session_task
from .replay import commit_session
from .taskset import PolarData, PolarTask, PolarTaskset, PolarTasksetConfig

__all__ = [
    "PolarData",
    "PolarHarness",
    "PolarHarnessConfig",
    "PolarTask",
    "PolarTaskset",
    "PolarTasksetConfig",
    "commit_session",
    "session_task",
]

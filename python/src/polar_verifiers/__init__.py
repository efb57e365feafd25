"""The id verifiers loads Polar by: ``vf-eval polar-verifiers ...`` imports this module and takes
its one Taskset and one Harness subclass from ``__all__`` (verifiers' loader cannot import a
dotted id). The code is ``polar_rollouts.vf_env``."""

from polar_rollouts.vf_env import PolarHarness, PolarTaskset

__all__ = ["PolarHarness", "PolarTaskset"]

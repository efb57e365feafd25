"""Plug-ins at trainers' own extension points (docs/trainers.md). Each module imports its
trainer's packages only when used: ``from polar_rollouts.plugins.trl import polar_rollout_func``."""

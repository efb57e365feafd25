"""``polar_grpo``: GRPO with Polar's session rule, as a verl advantage estimator.

verl's own ``grpo`` estimator counts rows, and a row is a trace: a session split into several
traces (``per_request``, a compaction) would weigh several times in its group's mean and std.
Importing this module registers ``polar_grpo`` in verl's estimator registry; set
``algorithm.adv_estimator=polar_grpo`` and verl's ``compute_advantage`` calls it with the
arguments it gives every registered estimator (``token_level_rewards``, ``response_mask``,
``config``, ``index`` = ``uid``). The sessions come from the ``PolarUid`` values the adapter
puts in ``uid``. A bare ``uid`` (a plain string: verl's own rows, as the ``polar`` agent loop
makes them on verl's legacy worker, one session per row) counts its row as one session. verl's
v1 trainer (``trainer.use_v1``) hands estimators bare uids for every trace of a session; there
``grpo`` is the estimator to use (v1 scores each ``{uid}_{session_id}`` once), and the agent loop
refuses ``polar_grpo`` (polar_rollouts/plugins/verl_agent_loop.py). Checked against verl 0.9.1 (``verl/trainer/ppo/ray_trainer.py``,
``compute_advantage``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..groups import session_grpo_advantages

NAME = "polar_grpo"


def compute_polar_grpo_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: np.ndarray,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any = None,
    **_: Any,
) -> tuple[Any, Any]:
    import torch

    if config is not None:
        norm_adv_by_std_in_grpo = bool(getattr(config, "norm_adv_by_std_in_grpo", norm_adv_by_std_in_grpo))
    # A bare uid's row is its own session: the row number names it.
    sessions = [getattr(uid, "session_id", None) or f"\0row-{i}" for i, uid in enumerate(index)]
    rewards = token_level_rewards.sum(dim=-1).detach().cpu().double().numpy()
    advantages = session_grpo_advantages(
        [str(u) for u in index], sessions, rewards, eps=epsilon, normalize_std=norm_adv_by_std_in_grpo
    )
    scores = torch.from_numpy(advantages).to(token_level_rewards).unsqueeze(-1) * response_mask
    return scores, scores


def register() -> None:
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    if ADV_ESTIMATOR_REGISTRY.get(NAME) is not compute_polar_grpo_advantage:
        register_adv_est(NAME)(compute_polar_grpo_advantage)


register()

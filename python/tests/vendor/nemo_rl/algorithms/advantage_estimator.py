# Vendored from NVIDIA-NeMo/RL at commit 7ea279abfbeb698b092856d0dab61e7cf39bc909, file nemo_rl/algorithms/advantage_estimator.py.
# License: Apache-2.0 (python/tests/vendor/nemo_rl/LICENSE). Refreshed by
# scripts/vendor-trainer-sources.py;
# do not edit by hand.
# Copied unchanged: AdvEstimatorConfig (lines 44-54), GRPOAdvantageEstimator (lines 57-98).
# The preamble before the copied code is ours.
import torch
from pydantic import BaseModel

from nemo_rl.algorithms.utils import calculate_baseline_and_std_per_prompt

ClippedPGLossConfig = dict


class AdvEstimatorConfig(BaseModel, extra="allow"):
    """Configuration for advantage estimator (GRPO, GDPO, or Reinforce++)."""

    name: str = "grpo"  # "grpo", "gdpo", or "reinforce_plus_plus"
    # GRPO specific
    normalize_rewards: bool = True
    use_leave_one_out_baseline: bool = True
    # GDPO specific: optional per-component weights w_n for the aggregation.
    reward_weights: list[float] | None = None
    # Reinforce++ specific
    minus_baseline: bool = True

class GRPOAdvantageEstimator:
    """GRPO-style advantage estimator with leave-one-out baseline.

    Note: GRPO computes advantages over all responses for each prompt.
    """

    def __init__(
        self, estimator_config: AdvEstimatorConfig, loss_config: ClippedPGLossConfig
    ):
        self.use_leave_one_out_baseline = estimator_config.use_leave_one_out_baseline
        self.normalize_rewards = estimator_config.normalize_rewards

    def compute_advantage(self, prompt_ids, rewards, mask, **kwargs):
        """Compute GRPO advantages.

        Args:
            prompt_ids: Tensor of shape [batch_size] identifying which prompt each sample belongs to.
            rewards: Tensor of shape [batch_size] containing reward for each sample.
            mask: Response token mask of shape [batch_size, seq_len], 1 for valid response tokens, 0 for padding.
                  Used only for expanding advantages to token-level shape.
            **kwargs: Additional arguments (unused).

        Returns:
            Advantages tensor of shape [batch_size, seq_len].
        """
        baseline, std = calculate_baseline_and_std_per_prompt(
            prompt_ids,
            rewards,
            torch.ones_like(rewards),
            leave_one_out_baseline=self.use_leave_one_out_baseline,
        )
        advantages = (rewards - baseline).unsqueeze(-1)

        if self.normalize_rewards:
            # don't sharpen the ones with no variation
            epsilon = 1e-6
            non_zero_std_mask = std > 0
            advantages[non_zero_std_mask] = advantages[non_zero_std_mask] / (
                std.unsqueeze(-1)[non_zero_std_mask] + epsilon
            )

        return advantages.expand(mask.shape)

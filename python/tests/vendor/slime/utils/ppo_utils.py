# Vendored from THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, file slime/utils/ppo_utils.py.
# License: Apache-2.0 (python/tests/vendor/slime/LICENSE). Refreshed by
# scripts/vendor-trainer-sources.py;
# do not edit by hand.
# Copied unchanged: get_grpo_returns (lines 361-368).
# The preamble before the copied code is ours.
import torch


def get_grpo_returns(
    rewards: torch.Tensor,
    kl: list[torch.Tensor],
):
    returns = []
    for i in range(len(rewards)):
        returns.append(torch.ones_like(kl[i]) * rewards[i])
    return returns

# Vendored from NVIDIA-NeMo/RL at commit 7ea279abfbeb698b092856d0dab61e7cf39bc909, file nemo_rl/algorithms/utils.py.
# License: Apache-2.0 (python/tests/vendor/nemo_rl/LICENSE). Refreshed by
# scripts/vendor-trainer-sources.py;
# do not edit by hand.
# Copied unchanged: calculate_baseline_and_std_per_prompt (lines 104-198).
# The preamble before the copied code is ours.
import torch


def calculate_baseline_and_std_per_prompt(
    prompts: torch.Tensor,
    rewards: torch.Tensor,
    valid_mask: torch.Tensor,
    leave_one_out_baseline: bool = True,
    std_rewards: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Function to compute a baseline for each (prompt, response) pair in the batch.

    The same baseline is calculated for each prompt. Samples set to 0 in 'valid_mask'
    are not included in the baseline calculation.

    prompts:    tensor (b, s)     Tensor of prompts the model used. May be on any device
    rewards:    tensor (b,)       Float-valued rewards. May be on any device
    valid_mask: tensor (b,)       Vector of 0/1, where 0 is to ignore and 1 is to keep
    leave_one_out_baseline: bool  Compute an unbiased baseline by leaving out the sample that
                                  the baseline is for (from RLOO https://arxiv.org/abs/2402.14740)
    std_rewards: tensor (b,)      Optional separate reward tensor used only for the std
                                  calculation. Defaults to `rewards`. Useful for DAPO,
                                  which needs std on the raw task metric for dynamic
                                  sampling filtering while keeping baseline on the
                                  shaped reward.

    Returns:
    tensor (b,), tensor (b,) of baselines and std on the same device as 'rewards'
    """
    if std_rewards is None:
        std_rewards = rewards
    unique_prompts = torch.unique(prompts, dim=0)

    baseline = torch.zeros_like(rewards)
    sq_baseline = torch.zeros_like(rewards)
    std = torch.zeros_like(rewards)
    device_ordinal = rewards.get_device()
    if device_ordinal == -1:
        reward_device = torch.device("cpu")
    else:
        reward_device = torch.device(f"cuda:{device_ordinal}")

    for i in range(len(unique_prompts)):
        is_matching_prompt = (prompts == unique_prompts[i]).all(1)
        prompt_idx = torch.arange(len(prompts), device=reward_device)[
            is_matching_prompt
        ]

        if leave_one_out_baseline:
            baseline_mask_matrix = (1 - torch.eye(len(prompt_idx))).to(reward_device)
        else:
            baseline_mask_matrix = torch.ones((len(prompt_idx), len(prompt_idx))).to(
                reward_device
            )

        if valid_mask[prompt_idx].sum() <= 1:
            # Ignore sample: there are no valid responses, so set baseline equal to reward
            # to ignore it in the loss computation
            baseline[prompt_idx] = rewards[prompt_idx]
        else:
            num_valid = valid_mask[prompt_idx].float().sum() - int(
                leave_one_out_baseline
            )
            prompt_baseline = (
                torch.matmul(
                    baseline_mask_matrix, rewards[prompt_idx] * valid_mask[prompt_idx]
                )
                / num_valid
            )
            std_prompt_baseline = (
                prompt_baseline
                if std_rewards is rewards
                else torch.matmul(
                    baseline_mask_matrix,
                    std_rewards[prompt_idx] * valid_mask[prompt_idx],
                )
                / num_valid
            )
            std_prompt_baseline_square = (
                torch.matmul(
                    baseline_mask_matrix,
                    torch.pow(std_rewards[prompt_idx], 2) * valid_mask[prompt_idx],
                )
                / num_valid
            )

            baseline[prompt_idx] = prompt_baseline
            sq_baseline[prompt_idx] = std_prompt_baseline_square
            std[prompt_idx] = (
                (
                    (std_prompt_baseline_square - std_prompt_baseline.square())
                    * (num_valid / (num_valid - 1))
                )
                .sqrt()
                .nan_to_num(0)
            )

    return baseline, std

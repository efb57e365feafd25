# Vendored from NVIDIA-NeMo/RL at commit 7ea279abfbeb698b092856d0dab61e7cf39bc909, file nemo_rl/algorithms/grpo.py.
# License: Apache-2.0 (python/tests/vendor/nemo_rl/LICENSE). Refreshed by
# scripts/vendor-trainer-sources.py;
# do not edit by hand.
# Copied unchanged: extract_initial_prompt_messages (lines 1877-1907), add_grpo_token_loss_masks_and_generation_logprobs (lines 1910-1942).
# The preamble before the copied code is ours.
from typing import cast

import torch

LLMMessageLogType = list
VLMMessageLogType = list


# Stand-in: text-only logs carry no MoE routed experts, so there is nothing to backfill.
def backfill_missing_routed_experts(message_logs):
    return None


def extract_initial_prompt_messages(
    message_logs: list,
    original_prompt_lengths: torch.Tensor,
) -> list:
    """Extract the original prompt messages from message logs using token length.

    This function correctly identifies original prompt messages even when the prompt
    contains assistant messages (e.g., multi-turn conversation history).

    Args:
        message_logs: List of message logs, where each log is a list of messages.
        original_prompt_lengths: Tensor of original prompt token lengths per sample.

    Returns:
        List of message logs containing only the original prompt messages.
    """
    initial_prompt_message_logs = []
    for i, message_log in enumerate(message_logs):
        initial_prompt_log = []
        cumulative_length = 0
        target_length = original_prompt_lengths[i].item()

        for message in message_log:
            if cumulative_length >= target_length:
                break
            initial_prompt_log.append(message)
            cumulative_length += len(message["token_ids"])

        initial_prompt_message_logs.append(initial_prompt_log)

    return initial_prompt_message_logs

def add_grpo_token_loss_masks_and_generation_logprobs(
    message_logs: list[LLMMessageLogType | VLMMessageLogType],
) -> None:
    """Add GRPO loss masks and ensure generation logprobs exist in message logs.

    Assistant messages can be part of the original multi-turn prompt history. Only
    generated assistant messages have generation_logprobs, so use that field as the
    trainable-token marker. This function mutates each message in-place by adding a
    token_loss_mask and, when missing, a zero-valued generation_logprobs tensor.
    Router-replay routes get the same treatment via
    :func:`backfill_missing_routed_experts`, so every per-token field is defined
    for every tokenized message before the batch is flattened.

    Args:
        message_logs: Batch of tokenized message logs. Each message must contain a
            ``role`` and ``token_ids`` field. Messages that already contain
            ``generation_logprobs`` are treated as rollout-generated messages.
    """
    backfill_missing_routed_experts(message_logs)
    for message_log in message_logs:
        for message in message_log:
            role = cast(str, message["role"])
            token_ids = cast(torch.Tensor, message["token_ids"])

            if role == "assistant" and "generation_logprobs" in message:
                message["token_loss_mask"] = torch.ones_like(token_ids)
            else:
                message["token_loss_mask"] = torch.zeros_like(token_ids)

            if "generation_logprobs" not in message:
                message["generation_logprobs"] = torch.zeros_like(
                    token_ids, dtype=torch.float32
                )

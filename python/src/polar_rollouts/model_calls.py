"""A trace as the model calls that sampled it: what NeMo Gym's response items and verifiers'
``TurnTokens`` carry (each call's whole prompt, its sampled ids and their logprobs)."""

from __future__ import annotations

from dataclasses import dataclass

from .trace import ShardFormatError, Trace


@dataclass(frozen=True)
class ModelCall:
    """One model call of a trace.

    ``prompt_ids`` is everything the engine saw before the call: the trace prompt and the response
    up to ``start`` (earlier generations and the context inserted between them), so each call's
    prompt starts with the previous call's prompt and generation, as NeMo RL and verifiers check.
    """

    prompt_ids: list[int]
    generation_ids: list[int]
    generation_logprobs: list[float]
    start: int
    end: int


def model_calls(trace: Trace) -> list[ModelCall]:
    """The trace's runs of sampled tokens (mask 1), also cut where a sampled turn ends.

    The cut points are the trace's ``version_spans`` (one per sampled turn); shards written before
    them have only the mask, and two calls whose generations touch with nothing inserted between
    them then read as one call: the same tokens, trained the same way. Mask-0 tokens inside a turn
    (an end-of-turn token the template added) are context, never a generation.
    """
    if trace.response_logprobs is None:
        raise ShardFormatError(
            f"{trace.session_id} trace {trace.trace_index}: no logprobs, "
            "so its model calls cannot be handed on (an engine without logprobs, or a capture without them)"
        )
    mask = trace.loss_mask.tolist()
    ids = trace.response_ids.tolist()
    logprobs = trace.response_logprobs.tolist()
    prompt = trace.prompt_ids.tolist()
    turn_ends = {span.end for span in trace.version_spans}
    calls: list[ModelCall] = []
    start: int | None = None
    for i in range(len(ids) + 1):
        sampled = i < len(ids) and mask[i] == 1
        if start is not None and (not sampled or i in turn_ends):
            calls.append(ModelCall(prompt + ids[:start], ids[start:i], logprobs[start:i], start, i))
            start = None
        if sampled and start is None:
            start = i
    return calls

"""The behaviour policy's logprobs of a trace, checked against what the engine says they mean.

A trainer's importance ratio compares the training model with the distribution that sampled
each token: after temperature, top-k, top-p, min-p, penalties, logit bias, min_tokens, bad words
and grammar masks. vLLM's default ``raw_logprobs`` are before all of them, so with any of them in
effect (``RESHAPING``) the recorded logprobs are not the sampler's
(``--logprobs-mode processed_logprobs`` makes vLLM report the sampler's). Each capture records
``sampling.logprobs_mode`` and the params sent; the reconstruction keeps the distinct ones in
the trace's ``metadata["sampling"]``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..trace import Trace

RawLogprobs = Literal["refuse", "warn"]
FIX = "start vLLM with --logprobs-mode processed_logprobs"
# Modes whose values are the sampled distribution's logprobs (SGLang's are after temperature).
SAMPLER_MODES = ("processed_logprobs", "temperature_scaled")
NOT_LOGPROBS = ("raw_logits", "processed_logits")


class LogprobsError(ValueError):
    """A trace's logprobs are missing or are not the sampling distribution's."""


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _filled(v: Any) -> bool:
    """A list, dict or string setting that is present and not empty."""
    return v is not None and v is not False and v != {} and v != [] and v != ""


# Every request setting under which an engine samples from something other than the model's raw
# distribution, with the test that says it is in effect. vLLM computes raw_logprobs before all of
# them: penalties, logit bias, min_tokens (masks the stop tokens), bad words, allowed token ids,
# structured output and a forced tool call (grammar masks), logits processors.
RESHAPING: dict[str, Callable[[Any], bool]] = {
    "temperature": lambda v: _number(v) and v != 1,
    "top_p": lambda v: _number(v) and v < 1,
    "top_k": lambda v: _number(v) and v > 0,
    "min_p": lambda v: _number(v) and v > 0,
    "typical_p": lambda v: _number(v) and v < 1,
    "presence_penalty": lambda v: _number(v) and v != 0,
    "frequency_penalty": lambda v: _number(v) and v != 0,
    "repetition_penalty": lambda v: _number(v) and v != 1,
    "min_tokens": lambda v: _number(v) and v > 0,
    "logit_bias": _filled,
    "bad_words": _filled,
    "allowed_token_ids": _filled,
    "logits_processors": _filled,
    "structured_outputs": _filled,
    "guided_json": _filled,
    "guided_regex": _filled,
    "guided_choice": _filled,
    "guided_grammar": _filled,
    "regex": _filled,
    "json_schema": _filled,
    "ebnf": _filled,
    # The proxy records a response format by its type and a named tool choice as "function"
    # (proxy-worker/sampling.ts); a mapping is what a request itself holds.
    "response_format": lambda v: (v.get("type") if isinstance(v, Mapping) else v) in ("json_object", "json_schema"),
    "tool_choice": lambda v: v in ("required", "function") or isinstance(v, Mapping),
}


def _reshaping_params(params: Mapping[str, Any]) -> list[str]:
    """The params that make the sampled distribution differ from the model's raw one."""
    return [f"{name}={params[name]!r}" for name, active in RESHAPING.items() if name in params and active(params[name])]


def check_logprobs_mode(trace: Trace, *, raw_logprobs: RawLogprobs = "refuse") -> None:
    """Refuses (or, with ``raw_logprobs="warn"``, warns about) logprobs that are not the sampler's.

    Raw logprobs with reshaping params sent are refused; raw logprobs with no params sent are
    warned about (the engine's generation-config defaults applied, and they may reshape), as
    are traces that record no sampling at all. Logits are never logprobs and always refused.
    """
    where = f"{trace.session_id} trace {trace.trace_index}"
    sampling = trace.metadata.get("sampling")
    if not sampling:
        warnings.warn(f"{where}: no sampling record, so what its logprobs mean is unknown", stacklevel=3)
        return
    for record in sampling:
        mode = record.get("logprobs_mode", "unknown")
        params = record.get("params") or {}
        if mode in SAMPLER_MODES:
            continue
        if mode in NOT_LOGPROBS:
            raise LogprobsError(f"{where}: the engine returned {mode}, not logprobs; {FIX}")
        reshaping = _reshaping_params(params)
        if mode == "raw_logprobs" and reshaping:
            message = (
                f"{where}: raw_logprobs (before sampling) with {', '.join(reshaping)}: they are not "
                f"the sampling distribution's; {FIX}"
            )
            if raw_logprobs == "refuse":
                raise LogprobsError(message + ' (or pass raw_logprobs="warn")')
            warnings.warn(message, stacklevel=3)
        elif mode == "raw_logprobs" and "temperature" not in params:
            warnings.warn(
                f"{where}: raw_logprobs with no temperature sent (the engine's generation-config "
                f"default applied); if it is not 1, {FIX}",
                stacklevel=3,
            )
        elif mode == "unknown":
            warnings.warn(f"{where}: logprobs_mode unknown; for RL, {FIX}", stacklevel=3)


def behaviour_logprobs(trace: Trace, *, raw_logprobs: RawLogprobs = "refuse") -> npt.NDArray[np.float32]:
    """The trace's ``response_logprobs`` once their meaning is checked; a trace without them is
    refused by name (they are never replaced by 0.0, which would claim probability 1)."""
    if trace.response_logprobs is None:
        raise LogprobsError(
            f"{trace.session_id} trace {trace.trace_index} has no logprobs; drop it with "
            "filter_traces(TraceFilter(require_logprobs=True)) or ask the adapter for no logprobs"
        )
    check_logprobs_mode(trace, raw_logprobs=raw_logprobs)
    return trace.response_logprobs

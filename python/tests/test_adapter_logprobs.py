"""The raw-logprobs refusal: every sampling setting under which the engine's raw logprobs (vLLM's
default, taken before sampling) are not the distribution the tokens were drawn from is refused by
all four adapters, and neutral values of the same settings are not."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from support.rows import row

from polar_rollouts import Trace
from polar_rollouts.adapters.behaviour_logprobs import LogprobsError, check_logprobs_mode
from polar_rollouts.adapters.nemo_rl import to_message_log
from polar_rollouts.adapters.slime import to_slime_samples
from polar_rollouts.adapters.trl import to_hf_rows
from polar_rollouts.adapters.verl import to_verl_tensors

RESHAPING_SENT: list[tuple[str, Any]] = [
    ("temperature", 0.6),
    ("top_p", 0.9),
    ("top_k", 20),
    ("min_p", 0.05),
    ("typical_p", 0.9),
    ("presence_penalty", 1.5),
    ("frequency_penalty", -0.5),
    ("repetition_penalty", 1.1),
    ("min_tokens", 8),
    ("logit_bias", {"151645": -100}),
    ("bad_words", ["rm -rf"]),
    ("allowed_token_ids", [1, 2, 3]),
    ("logits_processors", ["my.Processor"]),
    ("structured_outputs", {"regex": "[a-z]+"}),
    ("guided_json", {"type": "object"}),
    ("guided_regex", "[0-9]+"),
    ("guided_choice", ["yes", "no"]),
    ("guided_grammar", "root ::= 'a'"),
    ("regex", "[0-9]+"),
    ("json_schema", "{}"),
    ("ebnf", "root ::= 'a'"),
    ("response_format", {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}),
    ("tool_choice", "required"),
    ("tool_choice", {"type": "function", "function": {"name": "bash"}}),
    # As the proxy records them (proxy-worker/sampling.ts: scalars only).
    ("logit_bias", '{"151645":-100}'),
    ("response_format", "json_schema"),
    ("tool_choice", "function"),
]
NEUTRAL_SENT: list[tuple[str, Any]] = [
    ("temperature", 1.0),
    ("top_p", 1.0),
    ("top_k", -1),
    ("min_p", 0.0),
    ("presence_penalty", 0.0),
    ("frequency_penalty", 0),
    ("repetition_penalty", 1.0),
    ("min_tokens", 0),
    ("logit_bias", {}),
    ("bad_words", []),
    ("response_format", {"type": "text"}),
    ("tool_choice", "auto"),
    ("response_format", "text"),
    ("tool_choice", "none"),
    ("seed", 7),
    ("max_tokens", 64),
]


def sampled_with(param: str, value: Any, mode: str = "raw_logprobs") -> Trace:
    sampling = [{"logprobs_mode": mode, "params": {"temperature": 1.0, param: value}}]
    return Trace.from_row(row("a-0", task="a", metadata=json.dumps({"sampling": sampling})))


@pytest.mark.parametrize(("param", "value"), RESHAPING_SENT, ids=[f"{p}-{i}" for i, (p, _) in enumerate(RESHAPING_SENT)])
def test_every_reshaping_setting_is_refused_with_raw_logprobs(param: str, value: Any) -> None:
    trace = sampled_with(param, value)
    with pytest.raises(LogprobsError, match=rf"{param}=.*--logprobs-mode processed_logprobs"):
        check_logprobs_mode(trace)
    # The sampler's own logprobs are what the trainer wants, whatever was sent.
    check_logprobs_mode(sampled_with(param, value, mode="processed_logprobs"))


@pytest.mark.parametrize(("param", "value"), NEUTRAL_SENT, ids=[f"{p}-{i}" for i, (p, _) in enumerate(NEUTRAL_SENT)])
def test_neutral_values_are_not_refused(param: str, value: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_logprobs_mode(sampled_with(param, value))


ADAPTERS = {
    "verl": lambda t: to_verl_tensors([t], pad_token_id=0),
    "slime": lambda t: to_slime_samples([t]),
    "trl": lambda t: to_hf_rows([t]),
    "nemo_rl": lambda t: to_message_log(t),
}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_all_four_adapters_refuse_a_presence_penalty_session(adapter: str) -> None:
    """The case the issue found accepted silently: presence_penalty 1.5, vLLM's raw logprobs."""
    with pytest.raises(LogprobsError, match="presence_penalty=1.5"):
        ADAPTERS[adapter](sampled_with("presence_penalty", 1.5))

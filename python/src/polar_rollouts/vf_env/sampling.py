"""A verifiers rollout's sampling (``ctx.sampling``: ``SamplingConfig``, whose ``extra_body``
keys, prime-rl's ``cache_salt`` among them, arrive as extra fields) as the task's
``agent.sampling``, which the proxy applies to every call of the session (docs/proxy.md
"Sampling"). A field Polar cannot apply is refused by name, never dropped: the trainer would
compute its loss for a distribution the engine did not sample from."""

from __future__ import annotations

from typing import Any

from verifiers.v1.errors import HarnessError

# verifiers' name -> agent.sampling's (shared/schemas/sampling.ts).
_FIELDS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "seed": "seed",
    "max_tokens": "max_tokens",
    "cache_salt": "cache_salt",
}
# Asked for by trainers, done by Polar anyway: the proxy always takes the engine's logprobs.
_ALWAYS = {"logprobs": True}


def session_sampling(sampling: Any) -> dict[str, Any]:
    given = sampling.model_dump(exclude_none=True) if sampling is not None else {}
    out: dict[str, Any] = {}
    refused = []
    for key, value in given.items():
        if key in _FIELDS:
            out[_FIELDS[key]] = value
        elif _ALWAYS.get(key) != value:
            refused.append(key)
    if refused:
        raise HarnessError(
            f"sampling {', '.join(sorted(refused))}: Polar cannot apply it to the session's calls "
            f"(agent.sampling takes {', '.join(_FIELDS)})"
        )
    return out

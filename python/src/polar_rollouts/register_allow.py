"""Which client-named engine the harness may register with Polar's proxy (issue 48 item 10).

With ``register_client``, the engine URL comes from the rollout's client (prime-rl's orchestrator,
or anyone who reaches verifiers' env server) and is sent to ``/v1/replicas`` with the operator's
control token: without a check, any such client could make Polar send later sessions' prompts to
an address of its choosing. Only an address the operator listed in ``register_allow`` goes.
Standard library only (outside vf_env), so it is checked without verifiers installed.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable


class RegisterRefused(ValueError):
    """The client's engine URL is not one the operator allowed; the message names it."""


def engine_root(url: str) -> str:
    """``scheme://host:port[/path]`` of an engine's base URL, without ``/v1``: the form compared."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise RegisterRefused(f"engine URL {url[:200]!r} is not an http(s) URL with a host")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise RegisterRefused(f"engine URL {url[:200]!r}: no credentials, query or fragment allowed")
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        raise RegisterRefused(f"engine URL {url[:200]!r}: bad port") from None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    path = parts.path.rstrip("/").removesuffix("/v1").rstrip("/")
    return f"{parts.scheme.lower()}://{host}:{port}{path}"


def allowed_replica(base_url: str, allow: Iterable[str]) -> str:
    """The engine root to register for ``base_url``, if the operator's ``allow`` lists it."""
    allowed = {engine_root(a) for a in allow}
    root = engine_root(base_url)
    if root not in allowed:
        raise RegisterRefused(
            f"the rollout's client asked Polar to sample from {root}, which register_allow does not list "
            f"({', '.join(sorted(allowed)) or 'empty'}): a client may not choose where sessions are sent; "
            "add the engine's URL to [env.agent.harness] register_allow"
        )
    return root

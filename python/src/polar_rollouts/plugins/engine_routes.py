"""The trainer's own engines as Polar's only route, and the trainer's step as Polar's policy version.

A trainer plug-in (verl, slime, NeMo RL) reads the engines its trainer started from the trainer's
own objects and hands them here before every group it submits. ``EngineRoutes.ensure`` makes the
proxy's replica set exactly those engines (``PUT /v1/replicas`` when the set changed) and then
reads back what the proxy routes to (``GET /v1/replicas``): anything else, such as the dry-run
policy `polar serve` starts without ``--upstream``, an engine left from another run, or a proxy
that cannot take replicas, stops the run with the reason instead of training on another model's
tokens.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from ..client import ControlApiError, ControlClient
from ..trace import Trace
from .task_group import PluginError

# An engine the trainer just started may still be loading its weights (not yet passing the proxy's
# health probe, docs/control-api.md):
# how long a new one may stay unreachable before the run stops.
ENV_ENGINE_WAIT = "POLAR_ENGINE_WAIT_S"


def engine_url(address: str) -> str:
    """An engine's base URL from a trainer's ``host:port`` (verl's ``server_addresses``, slime's
    SGLang ``host:port``), an ``[ipv6]:port`` or a URL; the form the proxy lists replicas in."""
    address = str(address).strip()
    if "://" not in address:
        address = f"http://{address}"
    return address.rstrip("/")


class EngineRoutes:
    """Keeps one proxy routing to exactly the trainer's engines; see the module doc."""

    def __init__(self, client: ControlClient, *, who: str, wait_s: float | None = None) -> None:
        self.client = client
        self.who = who
        self.wait_s = wait_s
        self._registered: list[str] | None = None
        self._lock = threading.Lock()

    def ensure(self, addresses: Iterable[str]) -> list[str]:
        """The proxy routes to exactly ``addresses`` (the trainer's engines) after this, or it
        raises PluginError saying what the proxy routes to and why. Returns the URLs."""
        want = sorted({engine_url(a) for a in addresses})
        if not want:
            raise PluginError(
                f"{self.who}: the trainer reports no inference engine, so Polar has nothing of the "
                "trainer's to sample from (it would answer with whatever it routes to now)"
            )
        with self._lock:
            if want != self._registered:
                try:
                    wait_s = float(os.environ.get(ENV_ENGINE_WAIT, "300")) if self.wait_s is None else self.wait_s
                    self.client.replace_replicas(want, wait_s=wait_s)
                except ControlApiError as err:
                    raise PluginError(
                        f"{self.who}: Polar at {self.client.base_url} did not take the trainer's engines "
                        f"{want}: {err.message} ({err.status})"
                    ) from None
                self._registered = want
            routed = self.routed()
            if routed != want:
                self._registered = None
                raise PluginError(
                    f"{self.who}: Polar at {self.client.base_url} routes to {routed}, not the trainer's "
                    f"engines {want} (another client changed its replicas?): refusing to train on another "
                    "model's tokens"
                )
        return want

    def routed(self) -> list[str]:
        try:
            replicas = self.client.replicas()
        except ControlApiError as err:
            raise PluginError(
                f"{self.who}: cannot read what Polar at {self.client.base_url} routes to: {err.message} ({err.status})"
            ) from None
        return sorted(engine_url(str(r.get("url", ""))) for r in replicas)


def stamp_version(client: ControlClient, version: int, *, who: str) -> None:
    """The trainer's step as the version the proxy writes on every capture from now on (engines
    that report their own, ``/weight_info``, still win on theirs)."""
    try:
        client.set_policy_version(int(version))
    except ControlApiError as err:
        raise PluginError(
            f"{who}: Polar at {client.base_url} refused policy version {version}: {err.message} ({err.status})"
        ) from None


def _as_step(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def version_range(traces: Sequence[Trace]) -> tuple[int | None, int | None]:
    """The oldest and newest step versions the traces' tokens were sampled under (their
    ``policy_version``, every span's start and end, ``policy_version_end``); None where the
    captures carry no step number."""
    found: list[int] = []
    for t in traces:
        values = [t.policy_version, t.policy_version_end]
        for span in t.version_spans:
            values += [span.version_start, span.version_end]
        found += [v for v in (_as_step(x) for x in values) if v is not None]
    if not found:
        return None, None
    return min(found), max(found)

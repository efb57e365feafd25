"""The policy NeMo Gym's global config names (``policy_base_url``) as the proxy's only route.

NeMo RL hands its serving addresses to nothing but NeMo Gym's global config: ``NemoGym._spinup``
(NVIDIA-NeMo/RL 7ea279ab, ``nemo_rl/environments/nemo_gym.py``) sets ``policy_base_url`` to its
vLLM servers' OpenAI base URLs (``http://ip:port/v1``, one per data-parallel rank, a list), and
NeMo Gym's model servers read it (``vllm_model``'s ``base_url: ${policy_base_url}``, a string or a
list). The agent server reads the same key from the same config, the way NeMo Gym's servers do:
the ``NEMO_GYM_CONFIG_DICT`` variable NeMo Gym starts each server with, or a head server's
``GET /global_config_dict_yaml``, and keeps the proxy on exactly those engines (EngineRoutes).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from ..client import ControlClient
from ..plugins.engine_routes import EngineRoutes
from ..plugins.task_group import PluginError

# NeMo Gym's names (nemo_gym/global_config.py: NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME, POLICY_BASE_URL_KEY_NAME).
ENV_CONFIG = "NEMO_GYM_CONFIG_DICT"
POLICY_KEY = "policy_base_url"
WHO = "polar nemo_gym agent"


def parse_config(text: str) -> Mapping[str, Any]:
    """NeMo Gym's global config as YAML (JSON is YAML too, and is all the standard library reads)."""
    try:
        import yaml  # NeMo Gym installs it (omegaconf)

        doc = yaml.safe_load(text)
    except ImportError:
        doc = json.loads(text)
    if not isinstance(doc, Mapping):
        raise PluginError(f"{WHO}: NeMo Gym's global config is not a mapping ({type(doc).__name__})")
    return doc


def policy_urls(config: Mapping[str, Any]) -> list[str]:
    """The engines' base URLs as the proxy lists replicas (an OpenAI base URL's ``/v1`` dropped)."""
    value = config.get(POLICY_KEY)
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v.strip() for v in values):
        raise PluginError(
            f"{WHO}: NeMo Gym's global config gives no {POLICY_KEY} (got {value!r}), so Polar has no engine of the "
            "trainer's to sample from and would answer with whatever it routes to now (polar serve's dry-run policy)"
        )
    return [v.strip().rstrip("/").removesuffix("/v1") for v in values]


def env_config() -> Callable[[], Mapping[str, Any]] | None:
    """The config NeMo Gym started this process with (a server entry with an ``entrypoint``)."""
    text = os.environ.get(ENV_CONFIG)
    if text is None:
        return None
    config = parse_config(text)
    return lambda: config


def head_config(head_url: str) -> Callable[[], Mapping[str, Any]]:
    """A NeMo Gym head server's config, read again on every call (the trainer may change it)."""
    url = head_url.rstrip("/") + "/global_config_dict_yaml"

    def read() -> Mapping[str, Any]:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                body = json.loads(answer.read())
        except (OSError, ValueError) as err:
            raise PluginError(f"{WHO}: cannot read NeMo Gym's global config at {url}: {err}") from None
        # The head server answers the YAML text as a JSON string.
        return parse_config(body) if isinstance(body, str) else parse_config(json.dumps(body))

    return read


class PolicyRoutes:
    """Before every group: the proxy routes to exactly the policy the config names, or PluginError."""

    def __init__(self, client: ControlClient, source: Callable[[], Mapping[str, Any]]) -> None:
        self.source = source
        self.routes = EngineRoutes(client, who=WHO)

    def __call__(self) -> list[str]:
        return self.routes.ensure(policy_urls(self.source()))

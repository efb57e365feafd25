"""What ``responses_api_agents/polar_agent/app.py`` runs when NeMo Gym starts Polar's agent.

NeMo Gym starts a server directory's entrypoint with the whole global config in
``NEMO_GYM_CONFIG_DICT`` (YAML, interpolations unresolved) and the server's top-level key in
``NEMO_GYM_CONFIG_PATH`` (``RunHelper.start``, nemo_gym/cli/env.py). Everything the agent needs
comes from there: the policy (``policy_base_url``: NeMo RL puts its vLLM servers there), and the
agent's own entry, where NeMo Gym wrote the host and port it gave the server and the user wrote
Polar's settings (``control_url``, ``task_template``, ``group_size``, ...). The two tokens are
never config values of their own: the control token comes from ``$POLAR_CONTROL_TOKEN``, and the
agent token is the one NeMo Gym's clients present, the password of the host
(``polar:TOKEN@HOST``, what both of its HTTP clients turn into Basic auth).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..nemo_gym.__main__ import main as agent_main
from ..nemo_gym.policy import ENV_CONFIG, POLICY_KEY

# NeMo Gym's name (nemo_gym/global_config.py: NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME).
ENV_PATH = "NEMO_GYM_CONFIG_PATH"
WHO = "polar nemo_gym agent"

# The entry's keys that are Polar's, and the agent flag each becomes.
FLAGS = {
    "control_url": "--control",
    "group_size": "--group-size",
    "group_timeout": "--group-timeout",
    "gather_seconds": "--gather-seconds",
    "row_fields": "--row-fields",
    "timeout": "--timeout",
    "run_id": "--run-id",
    "max_connections": "--max-connections",
    "idle_seconds": "--idle-seconds",
}
# The keys NeMo Gym itself reads or writes in a server entry (nemo_gym/config_types.py).
NEMO_GYM_KEYS = {"entrypoint", "host", "port", "num_workers", "domain", "name", "datasets"}


class LaunchError(Exception):
    """The config NeMo Gym started the agent with cannot start it; the message says why."""


def resolved(text: str, top: str) -> tuple[dict[str, Any], Any]:
    """The agent's entry and ``policy_base_url``, interpolations resolved as NeMo Gym's own
    servers resolve them (OmegaConf, which every NeMo Gym venv has); the first server under the
    top-level key, as nemo_gym's ``get_first_server_config_dict`` takes it."""
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError as err:
        raise LaunchError(f"omegaconf is not importable ({err}): run the agent in the venv NeMo Gym makes") from None
    try:
        config = OmegaConf.create(text)
        if not isinstance(config, DictConfig):
            raise LaunchError(f"${ENV_CONFIG} is not a mapping")
        if top not in config:
            raise LaunchError(f"${ENV_CONFIG} has no entry {top!r} (${ENV_PATH})")
        entry: Any = config[top]
        for _ in range(2):  # {top: {responses_api_agents: {name: {...}}}}
            if not isinstance(entry, DictConfig) or not entry:
                raise LaunchError(f"{top!r} is not a server entry ({{responses_api_agents: {{NAME: {{...}}}}}})")
            entry = next(iter(entry.values()))
        if not isinstance(entry, DictConfig):
            raise LaunchError(f"{top!r} is not a server entry")
        own = OmegaConf.to_container(entry, resolve=True)
        policy = OmegaConf.select(config, POLICY_KEY, default=None)
        if policy is not None and not isinstance(policy, (str, int, float)):
            policy = OmegaConf.to_container(policy, resolve=True)
    except LaunchError:
        raise
    except Exception as err:  # noqa: BLE001 (an unset ${oc.env:...}, bad YAML: said with its reason)
        raise LaunchError(f"NeMo Gym's config for {top!r}: {type(err).__name__}: {err}") from None
    assert isinstance(own, dict)
    return {str(k): v for k, v in own.items()}, policy


def agent_token(host: str) -> tuple[str, str]:
    """(the token in ``user:password@host``, the host to bind)."""
    userinfo, at, bind = host.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = password or user
    if not at or not token or not bind:
        raise LaunchError(
            f"host {host!r} carries no agent token: NeMo Gym's clients send no credential but the one in "
            "the URL, so write it polar:TOKEN@HOST (the shipped config: polar:${oc.env:POLAR_NEMO_GYM_TOKEN}@...)"
        )
    return token, bind


def agent_argv(top: str, entry: Mapping[str, Any], workdir: Path) -> list[str]:
    """The agent's flags from its entry; an inline task template is written under ``workdir``."""
    unknown = sorted(set(entry) - NEMO_GYM_KEYS - set(FLAGS) - {"task_template"})
    if unknown:
        raise LaunchError(f"{top!r}: unknown setting(s) {', '.join(unknown)} (Polar's: {', '.join([*FLAGS, 'task_template'])})")
    if not entry.get("control_url"):
        raise LaunchError(f"{top!r}: control_url is not set (the Polar proxy polar serve prints; $POLAR_CONTROL_URL)")
    if not isinstance(entry.get("port"), int):
        raise LaunchError(f"{top!r}: NeMo Gym gave no port (got {entry.get('port')!r})")
    token, bind = agent_token(str(entry.get("host") or ""))
    os.environ["POLAR_NEMO_GYM_TOKEN"] = token  # the agent's default; never on its command line
    argv = ["--name", top, "--host", bind, "--port", str(entry["port"])]
    for key, flag in FLAGS.items():
        value = entry.get(key)
        if value is None:
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        argv += [flag, str(value)]
    template = entry.get("task_template")
    if isinstance(template, Mapping):
        path = workdir / "task_template.json"
        path.write_text(json.dumps(template), encoding="utf-8")
        argv += ["--task-template", str(path)]
    elif isinstance(template, str) and template:
        if not Path(template).is_absolute():
            raise LaunchError(f"{top!r}: task_template {template!r} must be a mapping of TaskRequest fields or an absolute path")
        argv += ["--task-template", template]
    elif template is not None:
        raise LaunchError(f"{top!r}: task_template must be a mapping of TaskRequest fields or an absolute path")
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    text, top = os.environ.get(ENV_CONFIG), os.environ.get(ENV_PATH)
    if text is None or not top:
        print(f"{WHO}: ${ENV_CONFIG} and ${ENV_PATH} are unset: NeMo Gym (ng_run, NeMo RL) starts this entrypoint", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="polar-nemo-gym-") as workdir:
        try:
            entry, policy = resolved(text, top)
            flags = agent_argv(top, entry, Path(workdir))
        except LaunchError as err:
            print(f"{WHO}: {err}", file=sys.stderr, flush=True)
            return 2
        # The agent reads the policy from the same variable; given it resolved (JSON is YAML).
        os.environ[ENV_CONFIG] = json.dumps({} if policy is None else {POLICY_KEY: policy})
        return agent_main([*flags, *(argv or [])])

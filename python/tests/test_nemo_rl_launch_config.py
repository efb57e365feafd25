"""The shipped NeMo Gym entrypoint (polar_rollouts/nemo_gym_root) reads everything from the config
NeMo Gym starts it with, and refuses a config it cannot start from with the reason, before it
serves: an agent without a token NeMo Gym's clients can present, a misspelt setting (it would be
dropped), no control URL, no policy. The config is the shipped configs/polar_agent.yaml merged
with a user's entry and dumped unresolved, as NeMo Gym's RunHelper hands it over
(OmegaConf.to_yaml); ng_run itself runs in test_nemo_rl_gym_launch.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from polar_rollouts.nemo_gym_root import AGENT_DIR, CONFIG_PATH, ROOT
from polar_rollouts.nemo_gym_root.launch import agent_argv, main, resolved


def nemo_gym_config(entry: dict[str, Any], **top: Any) -> str:
    shipped = OmegaConf.load(ROOT / CONFIG_PATH)
    user = OmegaConf.create({"polar_agent": {"responses_api_agents": {"polar_agent": entry}}, **top})
    return OmegaConf.to_yaml(OmegaConf.merge(shipped, user))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("POLAR_NEMO_GYM_TOKEN", "agent-secret")
    monkeypatch.setenv("POLAR_CONTROL_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("POLAR_CONTROL_TOKEN", "control")
    monkeypatch.setenv("NEMO_GYM_CONFIG_PATH", "polar_agent")
    return monkeypatch


def test_the_server_directory_has_what_nemo_gym_needs() -> None:
    # nemo_gym/cli/setup_command.py: exactly one of requirements.txt / pyproject.toml.
    assert (AGENT_DIR / "requirements.txt").is_file() and not (AGENT_DIR / "pyproject.toml").exists()
    assert (AGENT_DIR / "app.py").is_file()
    entry = OmegaConf.load(ROOT / CONFIG_PATH)["polar_agent"]["responses_api_agents"]["polar_agent"]
    assert entry["entrypoint"] == "app.py"


def test_the_entry_becomes_the_agents_flags(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    template = {"agent": {"harness": "shell"}, "timeout_seconds": 60}
    text = nemo_gym_config(
        {"port": 14343, "group_size": 4, "task_template": template, "row_fields": ["instruction", "task_id"]},
        default_host="10.0.0.7",  # NeMo RL sets its node's address
        policy_base_url=["http://10.0.0.8:5000/v1", "http://10.0.0.9:5000/v1"],
    )
    entry, policy = resolved(text, "polar_agent")
    assert policy == ["http://10.0.0.8:5000/v1", "http://10.0.0.9:5000/v1"]
    assert entry["host"] == "polar:agent-secret@10.0.0.7"
    argv = agent_argv("polar_agent", entry, tmp_path)
    assert argv == [
        *("--name", "polar_agent", "--host", "10.0.0.7", "--port", "14343"),
        *("--control", "http://127.0.0.1:9", "--group-size", "4", "--row-fields", "instruction,task_id"),
        *("--task-template", str(tmp_path / "task_template.json")),
    ]
    assert json.loads((tmp_path / "task_template.json").read_text()) == template
    assert "agent-secret" not in " ".join(argv)  # the token goes by the environment, not ps


@pytest.mark.parametrize(
    ("entry", "unset", "reason"),
    [
        ({"port": 1, "host": "127.0.0.1"}, None, "carries no agent token"),
        ({"port": 1, "group_sise": 4}, None, "unknown setting\\(s\\) group_sise"),
        ({"port": 1}, "POLAR_CONTROL_URL", "control_url is not set"),
        ({"port": 1}, "POLAR_NEMO_GYM_TOKEN", "Environment variable 'POLAR_NEMO_GYM_TOKEN' not found"),
        ({"port": 1, "task_template": "template.json"}, None, "must be a mapping of TaskRequest fields or an absolute path"),
        ({"port": 1}, None, "gives no policy_base_url"),  # Polar would answer with its dry-run policy
    ],
)
def test_a_config_the_agent_cannot_start_from_stops_it_with_the_reason(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], entry: dict[str, Any], unset: str | None, reason: str
) -> None:
    import re

    if unset:
        env.delenv(unset)
    env.setenv("NEMO_GYM_CONFIG_DICT", nemo_gym_config(entry))
    assert main() == 2
    assert re.search(reason, capsys.readouterr().err)


def test_started_outside_nemo_gym_it_says_so(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    env.delenv("NEMO_GYM_CONFIG_DICT", raising=False)
    assert main() == 2
    assert "NeMo Gym (ng_run, NeMo RL) starts this entrypoint" in capsys.readouterr().err

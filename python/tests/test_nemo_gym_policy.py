"""The NeMo Gym agent server routes Polar to the policy NeMo Gym's global config names
(``policy_base_url``, where NeMo RL puts its vLLM servers' addresses) and refuses to run on
anything else. `polar serve` (routing to its own dry-run policy) is the proxy, and a second
`polar policy` stands for the trainer's engine; the agent server runs as NeMo Gym starts a
server: ``python -m polar_rollouts.nemo_gym`` with the config in ``NEMO_GYM_CONFIG_DICT``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, polar_policy, polar_serve_at
from polar_rollouts.client import ControlClient
from polar_rollouts.nemo_gym import PolarAgent, make_server
from polar_rollouts.nemo_gym.policy import PolicyRoutes, head_config

TOKEN = "agent-secret"
ROW = {"responses_create_params": {"input": "Write hello.txt"}, "_ng_task_index": 0, "_ng_rollout_index": 0}


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    with polar_policy() as url:
        yield url


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A `polar serve` of this module's own: the agent replaces its replicas."""
    with polar_serve_at(tmp_path_factory.mktemp("nemo-gym-policy")) as info:
        yield info


def nemo_gym_config(policy: Any) -> dict[str, Any]:
    """What NeMo RL's NemoGym._spinup hands NeMo Gym (7ea279ab), trimmed to the keys read here."""
    config: dict[str, Any] = {"policy_model_name": "policy", "policy_api_key": "dummy_key", "head_server": {"host": "0.0.0.0", "port": 11000}}
    if policy is not None:
        config["policy_base_url"] = policy
    return config


def start_agent(serve: dict[str, Any], config: dict[str, Any], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "polar_rollouts.nemo_gym", "--control", serve["proxy_url"], "--agent-token", TOKEN],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "python" / "src"),
            "POLAR_CONTROL_TOKEN": serve["token"],
            # What NeMo Gym's RunHelper puts there: the config as YAML (OmegaConf.to_yaml).
            "NEMO_GYM_CONFIG_DICT": yaml.safe_dump(config),
            "NEMO_GYM_CONFIG_PATH": "polar_agent",
            **env,
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def routed(serve: dict[str, Any]) -> list[str]:
    return [r["url"] for r in ControlClient(serve["proxy_url"], serve["token"]).replicas()]


def test_the_policy_nemo_gym_names_becomes_the_proxys_only_route(engine: str, serve: dict[str, Any]) -> None:
    dry_run = routed(serve)
    assert dry_run != [engine]  # `polar serve` without --upstream answers with its dry-run policy
    # NeMo RL's form: one OpenAI base URL per data-parallel rank, a list.
    agent = start_agent(serve, nemo_gym_config([f"{engine}/v1"]))
    try:
        assert agent.stdout is not None
        seen = ""
        for line in agent.stdout:
            seen += line
            if "polar nemo_gym agent polar_agent at http://" in line:
                break
        else:
            raise AssertionError(f"the agent server did not start:\n{seen}")
        assert routed(serve) == [engine]
        assert f"Polar routes to the policy ['{engine}']" in seen
    finally:
        agent.terminate()
        agent.wait(timeout=30)
        ControlClient(serve["proxy_url"], serve["token"]).replace_replicas(dry_run)


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        (None, "gives no policy_base_url"),  # Polar would answer with its dry-run policy
        ("http://127.0.0.1:9/v1", r"did not take the trainer's engines \['http://127.0.0.1:9'\]"),
    ],
)
def test_a_policy_polar_cannot_route_to_stops_the_agent_with_the_reason(
    serve: dict[str, Any], policy: str | None, reason: str
) -> None:
    before = routed(serve)
    agent = start_agent(serve, nemo_gym_config(policy), POLAR_ENGINE_WAIT_S="0")
    try:
        out, _ = agent.communicate(timeout=60)
    finally:
        agent.kill()  # an agent that kept serving must not outlive the test
    assert agent.returncode == 2, out
    assert "polar nemo_gym agent polar_agent at" not in out
    assert re.search(reason, out), out
    assert routed(serve) == before


class Head:
    """A NeMo Gym head server's config route (its FastAPI answers the YAML text as a JSON string)."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}
        head = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = json.dumps(json.dumps(head.config)).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_a_changed_policy_is_routed_to_and_a_run_whose_polar_routes_elsewhere_is_refused(
    engine: str, serve: dict[str, Any]
) -> None:
    control = ControlClient(serve["proxy_url"], serve["token"])
    dry_run = routed(serve)
    head = Head()
    head.config = nemo_gym_config(f"{engine}/v1")  # a string: NeMo Gym's vllm_model takes both
    routes = PolicyRoutes(control, head_config(head.url))
    agent = PolarAgent(control, {}, "r", timeout_s=5, routes=routes)
    srv = make_server(agent, "127.0.0.1", 0, "polar_agent", TOKEN)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        assert routes() == [engine] and routed(serve) == [engine]
        # The trainer's engine set changes (NeMo Gym's config names another): the next group goes there.
        with polar_policy() as moved:
            head.config = nemo_gym_config([f"{moved}/v1"])
            assert routes() == [moved] and routed(serve) == [moved]
            head.config = nemo_gym_config(f"{engine}/v1")
            assert routes() == [engine] and routed(serve) == [engine]
        control.replace_replicas(dry_run)  # another client puts the dry-run policy back
        request = urllib.request.Request(
            f"http://127.0.0.1:{srv.server_address[1]}/run",
            data=json.dumps(ROW).encode(),
            headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 502
        assert "not the trainer's engines" in str(refused.value.reason)
    finally:
        srv.shutdown()
        srv.server_close()
        head.server.shutdown()
        control.replace_replicas(dry_run)

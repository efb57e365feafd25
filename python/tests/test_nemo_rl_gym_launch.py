"""NeMo Gym starts Polar's agent from configuration alone (issue 48 item 5): NeMo Gym's real `ng_run`
(nemo-gym 0.4.0, its venv; NeMo RL's NeMo Gym environment calls the same `RunHelper.start`) finds
the server directory polar_rollouts ships (`polar_rollouts/nemo_gym_root`), runs its `app.py` with
the global config, and the agent makes the policy that config names (`policy_base_url`, where NeMo
RL puts its vLLM servers) Polar's only route. `polar serve` (routing to its own dry-run policy) is
the proxy; a second `polar policy`, behind a server that answers as NeMo RL's vLLM server does
(support/nemo_rl_engine.py: no `GET /health`), stands for the trainer's engine. Then NeMo Gym's own
`ng_collect_rollouts`, through ng_run's head server, completes a group of rollouts whose model
calls reached that engine."""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from conftest import SUPPORT, polar_policy, polar_serve_at
from support.checkouts import checkout, nemo_rl_imports
from support.ecosystem import ROOT, ecosystem_venv, env_of
from support.nemo_rl_engine import nemo_rl_shaped

from polar_rollouts.client import ControlClient
from polar_rollouts.nemo_gym_root import AGENT_DIR, CONFIG_PATH

AGENT_TOKEN = "ng-run-agent-token"
# NeMo RL's generation config (policy.generation): its server refuses a chat call sampled any other
# way (support/nemo_rl_engine.py), and _prepare_nemo_gym_rows stamps the train profile on each row.
TRAIN_SAMPLING = (0.9, 0.95)
VAL_SAMPLING = (0.6, 1.0)
STAMPED = {"temperature": TRAIN_SAMPLING[0], "top_p": TRAIN_SAMPLING[1]}
# Two alternatives (docs/dry-run-policy.md): sample 0 writes hi, sample 1 writes bye; the judge
# passes only hi, so one Polar task of both samples scores [1, 0].
TWO_WAYS = "Create hello.txt containing hi.\n\n```polar-script\nshell: echo hi > hello.txt\nsay: Done.\n---\nshell: echo bye > hello.txt\nsay: Done.\n```\n"


@pytest.fixture(scope="module")
def nemo_gym() -> Path:
    return ecosystem_venv("nemo-gym")


@pytest.fixture(scope="module")
def sampler() -> Iterator[str]:
    """The dry-run policy that samples for the trainer's engine (its /debug/requests counts calls)."""
    with polar_policy() as url:
        yield url


@pytest.fixture(scope="module")
def refused() -> list[str]:
    """The chat calls the trainer's engine refused as off-policy, with the reason."""
    return []


@pytest.fixture(scope="module")
def engine(sampler: str, refused: list[str]) -> Iterator[str]:
    """The trainer's engine as Polar sees it: NeMo RL's server's routes only, no GET /health, and
    its on-policy sampling check."""
    with nemo_rl_shaped(sampler, TRAIN_SAMPLING, VAL_SAMPLING, refused) as url:
        yield url


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with polar_serve_at(tmp_path_factory.mktemp("nemo-rl-serve")) as info:
        yield info


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def user_config() -> dict[str, Any]:
    """What a user writes (NeMo RL: the env.nemo_gym block) beside the shipped config path."""
    hello = json.loads((ROOT / "examples" / "tasks.jsonl").read_text().splitlines()[0])
    template = {
        "agent": hello["agent"],
        "evaluator": {"strategy": "test_on_output", "config": {"command": "grep -qx hi hello.txt"}},
        "timeout_seconds": hello["timeout_seconds"],
    }
    return {"polar_agent": {"responses_api_agents": {"polar_agent": {"group_size": 2, "task_template": template}}}}


class NgRun:
    """`ng_run` in its own process group (its servers are its children), output to a file."""

    def __init__(self, venv: Path, cwd: Path, args: list[str], env: dict[str, str]) -> None:
        self.log = cwd / "ng_run.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [str(venv / "bin" / "ng_run"), *args],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.output()
            if re.search(pattern, text):
                return text
            if self.process.poll() is not None:
                raise AssertionError(f"ng_run exited {self.process.returncode}:\n{text[-4000:]}")
            time.sleep(0.5)
        raise AssertionError(f"no {pattern!r} from ng_run in {timeout_s} s:\n{self.output()[-4000:]}")

    def stop(self) -> None:
        # NeMo Gym's own shutdown (SIGINT: its servers are sent SIGINT, Ray is shut down); then
        # whatever of the group is left.
        try:
            os.killpg(self.process.pid, signal.SIGINT)
            self.process.wait(timeout=30)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)


def nemo_gym_workdir(tmp_path: Path, nemo_gym: Path) -> Path:
    """A working directory NeMo Gym finds Polar's server directory from, and the venv for it."""
    work = tmp_path / "work"
    # NeMo Gym 0.4.0 looks a server directory up under the working directory (then its install
    # root); NeMo Gym 0.5 also under $NEMO_GYM_EXTRA_ROOTS, where the docs point it instead.
    (work / "responses_api_agents").mkdir(parents=True)
    (work / "responses_api_agents" / "polar_agent").symlink_to(AGENT_DIR)
    # The venv NeMo Gym would make from requirements.txt (uv, from a registry), made already:
    # skip_venv_if_present takes it as it is.
    venv = tmp_path / "venvs" / "responses_api_agents" / "polar_agent" / ".venv"
    venv.parent.mkdir(parents=True)
    venv.symlink_to(nemo_gym)
    return work


def agent_env(serve: dict[str, Any]) -> dict[str, str]:
    """The three variables the shipped config reads; no PYTHONPATH: app.py finds polar_rollouts."""
    env = env_of(POLAR_CONTROL_URL=serve["proxy_url"], POLAR_CONTROL_TOKEN=serve["token"], POLAR_NEMO_GYM_TOKEN=AGENT_TOKEN)
    env.pop("PYTHONPATH")
    return env


def engine_calls(sampler: str) -> int:
    """The model calls the trainer's engine has answered (the dry-run policy's own count)."""
    with urllib.request.urlopen(f"{sampler}/debug/requests", timeout=10) as answer:
        return int(json.loads(answer.read())["chat_completions"])


def test_ng_run_starts_polars_agent_from_config_only_and_a_group_is_collected(
    nemo_gym: Path, engine: str, sampler: str, refused: list[str], serve: dict[str, Any], tmp_path: Path
) -> None:
    control = ControlClient(serve["proxy_url"], serve["token"])
    dry_run = [r["url"] for r in control.replicas()]
    assert dry_run != [engine]
    work = nemo_gym_workdir(tmp_path, nemo_gym)
    (work / "user.yaml").write_text(yaml.safe_dump(user_config()))
    env = agent_env(serve)
    calls_before = engine_calls(sampler)
    head = free_port()
    run = NgRun(
        nemo_gym,
        work,
        [
            f"+config_paths=[{CONFIG_PATH},user.yaml]",
            # What NeMo RL's NemoGym._spinup sets (7ea279ab): its vLLM servers, one /v1 URL per
            # data-parallel rank, and the head server.
            f"+policy_base_url=[{engine}/v1]",
            "+policy_model_name=policy",
            f"+head_server={{host:127.0.0.1,port:{head}}}",
            "+skip_venv_if_present=true",
            f"+uv_venv_dir={tmp_path / 'venvs'}",
        ],
        env,
    )
    try:
        seen = run.wait_for(r"All 1 / 1 servers ready", timeout_s=150)
        assert f"Polar routes to the policy ['{engine}']" in seen
        assert [r["url"] for r in control.replicas()] == [engine]

        out = tmp_path / "out"
        out.mkdir()
        rows = [{"responses_create_params": {"input": TWO_WAYS, **STAMPED}, "task_id": "hello"}]
        (out / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        done = subprocess.run(
            [
                str(nemo_gym / "bin" / "ng_collect_rollouts"),
                "+agent_name=polar_agent",
                f"+input_jsonl_fpath={out / 'in.jsonl'}",
                f"+output_jsonl_fpath={out / 'rollouts.jsonl'}",
                f"+head_server={{host:127.0.0.1,port:{head}}}",
                "+num_repeats=2",
                "+num_samples_in_parallel=2",
            ],
            cwd=out,
            # The head server answers its config unresolved: the collector resolves the host's
            # ${oc.env:POLAR_NEMO_GYM_TOKEN} itself (in NeMo RL, the same process as RunHelper).
            env=env_of(POLAR_NEMO_GYM_TOKEN=AGENT_TOKEN),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:] + run.output()[-3000:]
        # Every call carried the trainer's sampling, whatever the harness sent.
        assert refused == []
        rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines() if line.strip()]
        assert len(rollouts) == 2, rollouts
        assert sorted(r["reward"] for r in rollouts) == [0.0, 1.0]
        assert {r["polar"]["group_id"] for r in rollouts} == {rollouts[0]["polar"]["group_id"]}
        assert all(r["polar"]["group_size"] == 2 and r["response"]["output"] for r in rollouts)
        # The sessions' model calls went to the trainer's engine, not polar serve's dry-run policy.
        assert engine_calls(sampler) >= calls_before + 2
    finally:
        run.stop()
        control.replace_replicas(dry_run)


def documented_nemo_rl_config(tmp_path: Path) -> dict[str, Any]:
    """docs/trainers.md's NeMo RL config block, resolved as NeMo RL's run_grpo_nemo_gym.py does
    (OmegaConf.to_container(resolve=True)), with the test's group of 2 and task, loopback only
    (NeMo RL advertises its node's address for multi-node runs) and the venv made already."""
    docs = (ROOT / "docs" / "trainers.md").read_text()
    block = re.search(r"```yaml\n(# NeMo RL config\n.*?)```", docs, re.S)
    assert block, "docs/trainers.md has no NeMo RL config block"
    test = user_config()["polar_agent"]["responses_api_agents"]["polar_agent"]["task_template"]
    ours = {
        "grpo": {"num_generations_per_prompt": 2},
        "env": {
            "nemo_gym": {
                "polar_agent": {"responses_api_agents": {"polar_agent": {"task_template": test}}},
                "default_host": "127.0.0.1",
                "skip_venv_if_present": True,
                "uv_venv_dir": str(tmp_path / "venvs"),
            }
        },
    }
    config = OmegaConf.to_container(OmegaConf.merge(OmegaConf.create(block.group(1)), ours), resolve=True)
    assert isinstance(config, dict)
    return {str(k): v for k, v in config.items()}


def test_nemo_rls_own_nemo_gym_environment_starts_polars_agent_from_config_only(
    nemo_gym: Path, engine: str, sampler: str, refused: list[str], serve: dict[str, Any], tmp_path: Path
) -> None:
    """NeMo RL's `should_use_nemo_gym` and `NemoGym._spinup` (from the checkout;
    support/nemo_rl_gym_driver.py says what of it runs) on the config docs/trainers.md gives, then
    its `_postprocess_nemo_gym_to_nemo_rl_result` on each answer, as `run_rollouts` does."""
    nemo_rl = checkout("POLAR_NEMO_RL_CHECKOUT")
    control = ControlClient(serve["proxy_url"], serve["token"])
    dry_run = [r["url"] for r in control.replicas()]
    work = nemo_gym_workdir(tmp_path, nemo_gym)
    calls_before = engine_calls(sampler)
    spec = {
        "config": documented_nemo_rl_config(tmp_path),
        "base_urls": [f"{engine}/v1"],  # what NeMo RL's vLLM servers report, one per DP rank
        # One prompt, grpo.num_generations_per_prompt = 2, as _prepare_nemo_gym_rows leaves them.
        "rows": [
            {
                "responses_create_params": {"input": TWO_WAYS, **STAMPED, "max_output_tokens": 512},
                "agent_ref": {"name": "polar_agent"},
                "_rowidx": i,
            }
            for i in range(2)
        ],
    }
    try:
        done = subprocess.run(
            [str(nemo_gym / "bin" / "python"), str(SUPPORT / "nemo_rl_gym_driver.py"), str(nemo_rl), json.dumps(spec)],
            cwd=work,
            env=agent_env(serve),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-5000:]
        assert refused == []
        assert f"Polar routes to the policy ['{engine}']" in output
        found = re.search(r"^RESULTS (.*)$", done.stdout, re.M)
        assert found, output[-5000:]
        results = json.loads(found.group(1))
        assert sorted(r["reward"] for r in results) == [0.0, 1.0]
        assert {r["polar"]["group_id"] for r in results} == {results[0]["polar"]["group_id"]}
        assert all(r["polar"]["group_size"] == 2 and r["_rowidx"] in (0, 1) for r in results)
        assert engine_calls(sampler) >= calls_before + 2
        # What run_rollouts does next with each answer: NeMo RL's postprocessing onto its message
        # log (its contiguity check, token and logprob tensors), here with real torch.
        with nemo_rl_imports():
            from nemo_rl.environments.nemo_gym import NemoGym
        postprocess = NemoGym.__ray_metadata__.modified_class._postprocess_nemo_gym_to_nemo_rl_result
        tokenizer = AutoTokenizer.from_pretrained(str(ROOT / ".cache" / "engine" / "smollm2-135m-instruct"))
        for row, result in zip(spec["rows"], results):
            calls = [item for item in result["response"]["output"] if item.get("generation_token_ids")]
            assert len(calls) >= 2  # so the contiguity check compares one call with the next
            # It pops the token fields off the answer it is given.
            log = postprocess(SimpleNamespace(cfg={}), row, copy.deepcopy(result), tokenizer)["message_log"]
            assert [m["role"] for m in log] == ["user", "assistant"] * len(calls)
            for call, said in zip(calls, log[1::2]):
                assert said["token_ids"].tolist() == call["generation_token_ids"]
                assert said["generation_logprobs"].tolist() == pytest.approx(call["generation_log_probs"])
    finally:
        control.replace_replicas(dry_run)

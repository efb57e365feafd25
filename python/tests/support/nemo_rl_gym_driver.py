"""NeMo RL's own NeMo Gym environment (``nemo_rl/environments/nemo_gym.py`` from a checkout) spun up
in-process in the nemo-gym venv, as NeMo RL's GRPO does inside its Ray actor, on a resolved NeMo RL
config: ``should_use_nemo_gym(config)`` (the check run_grpo_nemo_gym.py asserts), ``NemoGym(cfg)``
with its ``env.nemo_gym`` block,
``_spinup()`` (which writes ``policy_base_url`` from ``cfg["base_urls"]`` and starts NeMo Gym's
``RunHelper``), then ``rch.run_examples`` on the rows, the call ``run_rollouts`` starts with.

Run by test_nemo_rl_gym_launch.py: ``python nemo_rl_gym_driver.py CHECKOUT SPEC_JSON`` in the
directory NeMo Gym looks server directories up in. Prints one ``RESULTS <json>`` line. NeMo RL's
module imports torch and transformers at the top, which this venv lacks: they are empty modules
here (checkouts.stubbed), and nothing that runs reads them; ``run_rollouts``' postprocessing onto
token tensors runs in the test's own venv, on the results printed. The node address NeMo RL detects is replaced by 127.0.0.1 so
everything stays on loopback (NeMo RL advertises it for multi-node runs)."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from pathlib import Path
from typing import Any

# checkouts.py imports pytest (for its skips), which this venv lacks and this script never calls.
sys.modules.setdefault("pytest", types.ModuleType("pytest"))
sys.path[:0] = [sys.argv[1], str(Path(__file__).resolve().parent)]

from checkouts import stubbed  # noqa: E402

TORCH_SIDE = ("torch", "transformers", "vllm", "megatron", "wandb", "mlflow", "swanlab", "zmq", "matplotlib")
LOGGING = ("prometheus_client", "tensorboard", "soundfile", "scipy", "absl", "pynvml", "nemo_automodel")


async def collect(env: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results = []
    for task in env.rch.run_examples(examples=rows, head_server_config=env.head_server_config):
        _row, result = await task
        results.append(result)
    return results


def main() -> None:
    spec = json.loads(sys.argv[2])
    # NeMo RL's policy package asserts transformers < 5.12 at import (a tokenizer patch).
    with stubbed(*TORCH_SIDE, *LOGGING, transformers={"__version__": "5.11.0"}):
        import nemo_rl.environments.nemo_gym as nemo_gym_env

    import ray

    config = spec["config"]
    assert nemo_gym_env.should_use_nemo_gym(types.SimpleNamespace(env=config["env"], policy=config["policy"]))

    nemo_gym_env._get_node_ip_local = lambda: "127.0.0.1"
    ray.init(include_dashboard=False)
    env = nemo_gym_env.NemoGym.__ray_metadata__.modified_class(
        nemo_gym_env.NemoGymConfig(
            model_name="policy", base_urls=spec["base_urls"], initial_global_config_dict=dict(config["env"]["nemo_gym"])
        )
    )
    try:
        env._spinup()
        print(f"SPUN UP head {env.head_server_config.host}:{env.head_server_config.port}", flush=True)
        results = asyncio.run(collect(env, spec["rows"]))
        print("RESULTS " + json.dumps(results), flush=True)
    finally:
        env.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()

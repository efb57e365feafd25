"""What prime-rl would train on from Polar rollouts under verifiers, beside the Polar shard row of
the same session; one JSON line per trace. Two ways in, both verifiers' own code:

  vf-trace-check.py run RUN_DIR STORE_DIR    a vf-eval run's traces.jsonl, read with verifiers'
                                             reader (`read_episodes`, traces as `vf.WireTrace`)
  vf-trace-check.py serve TASKS STORE_DIR    the first task rolled out through verifiers' env
                                             server (`EnvServer` + `EnvClient.run` with a
                                             `TrainClientConfig`): the path prime-rl's
                                             orchestrator takes
"""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.configs.cli.env import resolve_env_field
from verifiers.v1.serve.client import EnvClient
from verifiers.v1.serve.server import EnvServer
from verifiers.v1.utils.loaders import load_taskset
from verifiers.v1.utils.trace_store import read_episodes


def describe(trace: Any, store: Path) -> dict[str, Any]:
    polar = trace.info["polar"]
    shard = (store / "trajectories" / f"{polar['task_id']}.jsonl").read_text().splitlines()
    return {
        "task": trace.task.data.name,
        "ok": trace.ok,
        "reward": trace.reward,
        "polar": polar,
        "calls": len(trace.calls),
        "branches": [
            {"token_ids": b.token_ids, "sampled_mask": b.sampled_mask, "logprobs": b.logprobs} for b in trace.branches
        ],
        "shard": [json.loads(row) for row in shard if row.strip()],
    }


async def serve(tasks: str) -> list[Any]:
    # The env config as vf-eval resolves it from flags (narrowed to the taskset's classes).
    config = resolve_env_field(
        {"env": {"taskset": {"id": "polar-verifiers", "tasks": tasks}, "agent": {"runtime": {"type": "subprocess"}}}}
    )["env"]
    server = EnvServer(config, address="tcp://127.0.0.1:0")
    running = asyncio.create_task(server.run())
    client = EnvClient(server.address)
    try:
        await client.wait_for_server_startup(timeout=60)
        task = next(iter(load_taskset(config.taskset)))
        episode = await client.run(
            vf.TrainClientConfig(base_url="http://127.0.0.1:9/v1"),
            "policy",
            vf.SamplingConfig(temperature=1.0),
            task.data.model_dump(),
        )
        return list(episode.traces)
    finally:
        await client.close()
        running.cancel()


mode, source, store = sys.argv[1], sys.argv[2], Path(sys.argv[3])
if mode == "run":
    traces = [t for episode in read_episodes(Path(source), vf.WireTrace) for t in episode.traces]
else:
    traces = asyncio.run(serve(source))
for trace in traces:
    print(json.dumps(describe(trace, store)))

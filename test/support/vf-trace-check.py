"""What prime-rl would train on from Polar rollouts under verifiers, beside the Polar shard row of
the same session; one JSON line per trace. Three ways in, all verifiers' own code:

  vf-trace-check.py run RUN_DIR STORE_DIR     a vf-eval run's traces.jsonl, read with verifiers'
                                              reader (`read_episodes`, traces as `vf.WireTrace`)
  vf-trace-check.py serve TASKS STORE_DIR     the first task rolled out through verifiers' env
                                              server (`EnvServer` + `EnvClient.run` with a
                                              `TrainClientConfig`): the path prime-rl's
                                              orchestrator takes, with its model name and
                                              cache_salt ($VF_MODEL, $VF_CACHE_SALT, $VF_BASE_URL,
                                              more sampling as JSON in $VF_SAMPLING;
                                              $VF_REGISTER=1 registers the client's engine)
  vf-trace-check.py hostile TASKS STORE_DIR   the same, the task's request altered on the wire
                                              (its judge's command replaced by `true`)
  vf-trace-check.py serve-all TASKS STORE_DIR every task of the file at once, the same way
                                              ($VF_REGISTER_ALLOW: the engine URLs, comma-separated,
                                              a client may have registered)
"""

import asyncio
import json
import os
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
    polar = trace.info.get("polar")
    if polar is None:
        return {"task": trace.task.data.name, "ok": trace.ok, "errors": [str(e) for e in trace.errors]}
    shard = (store / "trajectories" / f"{polar['task_id']}.jsonl").read_text().splitlines()
    return {
        "task": trace.task.data.name,
        "ok": trace.ok,
        "errors": [str(e) for e in trace.errors],
        "reward": trace.reward,
        "polar": polar,
        "calls": len(trace.calls),
        "branches": [
            {"token_ids": b.token_ids, "sampled_mask": b.sampled_mask, "logprobs": b.logprobs} for b in trace.branches
        ],
        "shard": [row for row in map(json.loads, filter(str.strip, shard)) if row["session_id"] == polar["session_id"]],
    }


async def serve(tasks: str, hostile: bool, every: bool = False) -> tuple[list[Any], str]:
    # The env config as vf-eval resolves it from flags (narrowed to the taskset's classes); the
    # harness table is what a prime-rl TOML's [env.agent.harness] holds.
    allow = [u for u in os.environ.get("VF_REGISTER_ALLOW", "").split(",") if u]
    harness = {
        "id": "polar-verifiers",
        "register_client": os.environ.get("VF_REGISTER") == "1",
        "register_allow": allow,
    }
    config = resolve_env_field(
        {
            "env": {
                "taskset": {"id": "polar-verifiers", "tasks": tasks},
                "agent": {"runtime": {"type": "subprocess"}, "harness": harness},
            }
        }
    )["env"]
    server = EnvServer(config, address="tcp://127.0.0.1:0")
    running = asyncio.create_task(server.run())
    client = EnvClient(server.address)
    try:
        await client.wait_for_server_startup(timeout=60)
        tasks_ = list(load_taskset(config.taskset))
        if not every:
            tasks_ = tasks_[:1]
        salt = os.environ.get("VF_CACHE_SALT")

        async def one(task: Any) -> Any:
            data = task.data.model_dump()
            if hostile:
                data["request"]["evaluator"] = {"strategy": "test_on_output", "config": {"command": "true"}}
            # prime-rl's Env.run: its per-step model name (a LoRA adapter) and cache_salt in extra_body.
            return await client.run(
                vf.TrainClientConfig(base_url=os.environ.get("VF_BASE_URL", "http://127.0.0.1:9/v1")),
                os.environ.get("VF_MODEL", "policy"),
                vf.SamplingConfig(
                    temperature=1.0,
                    **({"extra_body": {"cache_salt": salt}} if salt else {}),
                    **json.loads(os.environ.get("VF_SAMPLING", "{}")),
                ),
                data,
            )

        episodes = await asyncio.gather(*(one(t) for t in tasks_))
        # What the orchestrator received, whole, as JSON: no secret of the server may be in it.
        return [t for e in episodes for t in e.traces], "".join(e.model_dump_json() for e in episodes)
    finally:
        await client.close()
        running.cancel()


mode, source, store = sys.argv[1], sys.argv[2], Path(sys.argv[3])
wire = ""
if mode == "run":
    traces = [t for episode in read_episodes(Path(source), vf.WireTrace) for t in episode.traces]
else:
    traces, wire = asyncio.run(serve(source, hostile=mode == "hostile", every=mode == "serve-all"))
token = os.environ.get("POLAR_CONTROL_TOKEN", "")
for trace in traces:
    print(json.dumps({**describe(trace, store), "wire_has_token": bool(token) and token in wire}))

"""``python -m polar_rollouts.nemo_gym --control URL --control-token T --task-template FILE``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from ..client import ControlClient
from .server import PolarAgent, make_server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="polar-nemo-gym",
        description="Serve Polar as a NeMo Gym agent: each /run row becomes one Polar session.",
    )
    parser.add_argument("--control", required=True, help="the Polar proxy with the control API (polar serve prints it)")
    parser.add_argument("--control-token", default=os.environ.get("POLAR_CONTROL_TOKEN"), help="default: $POLAR_CONTROL_TOKEN")
    parser.add_argument(
        "--task-template",
        help="a JSON file of TaskRequest fields every row's task starts from (agent, evaluator, timeout_seconds, ...); "
        "a row's `polar_task` object is merged over it",
    )
    parser.add_argument("--name", default="polar_agent", help="the agent name rows use (+agent_name=NAME)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument(
        "--run-id",
        default=time.strftime("ng%Y%m%d%H%M%S"),
        help="prefix of every task id; a /run re-sent with the same run id waits for the same session",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a /run waits for its session")
    args = parser.parse_args(argv)
    if not args.control_token:
        parser.error("--control-token (or $POLAR_CONTROL_TOKEN) is required")
    template = {}
    if args.task_template:
        with open(args.task_template, encoding="utf-8") as f:
            template = json.load(f)
        if not isinstance(template, dict):
            parser.error(f"--task-template {args.task_template}: must hold a JSON object of TaskRequest fields")
    agent = PolarAgent(ControlClient(args.control, args.control_token), template, args.run_id, timeout_s=args.timeout)
    server = make_server(agent, args.host, args.port, args.name)
    host, port = str(server.server_address[0]), int(server.server_address[1])
    # The line a script or test waits for; the head_server NeMo Gym is pointed at.
    print(f"polar nemo_gym agent {args.name} at http://{host}:{port} (run id {args.run_id})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

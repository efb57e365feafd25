"""``python -m polar_rollouts.nemo_gym --control URL --task-template FILE`` (tokens from the environment)."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections.abc import Sequence

from ..bounded_server import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_CONNECTIONS
from ..client import ControlClient
from ..plugins.task_group import PluginError
from .policy import ENV_CONFIG, PolicyRoutes, env_config, head_config
from .rows import DEFAULT_ROW_FIELDS, parse_row_fields
from .server import PolarAgent, make_server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="polar-nemo-gym",
        description="Serve Polar as a NeMo Gym agent: the repeats of each /run row become one Polar task.",
    )
    parser.add_argument("--control", required=True, help="the Polar proxy with the control API (polar serve prints it)")
    parser.add_argument("--control-token", default=os.environ.get("POLAR_CONTROL_TOKEN"), help="default: $POLAR_CONTROL_TOKEN")
    parser.add_argument(
        "--agent-token",
        default=os.environ.get("POLAR_NEMO_GYM_TOKEN"),
        help="the credential /run and the config route require (default: $POLAR_NEMO_GYM_TOKEN, else a random one, printed)",
    )
    parser.add_argument(
        "--task-template",
        help="a JSON file of TaskRequest fields every row's task starts from (agent, evaluator, timeout_seconds, ...)",
    )
    parser.add_argument(
        "--row-fields",
        default=",".join(DEFAULT_ROW_FIELDS),
        help="the TaskRequest fields a row's `polar_task` may set over the template, dotted and comma-separated "
        f"(default {','.join(DEFAULT_ROW_FIELDS)}); a row setting any other is refused with its name",
    )
    parser.add_argument(
        "--group-size",
        type=int,
        default=0,
        help="repeats per row the trainer sends (num_repeats / num_generations): a group is submitted as soon as it "
        "has them, and waits for all of them (--group-timeout); 0 = unknown, submit after --gather-seconds without a new "
        "repeat (a group that turns out short is marked so on its rows)",
    )
    parser.add_argument(
        "--gather-seconds", type=float, default=2.0, help="how long a row's group waits for another repeat (default 2)"
    )
    parser.add_argument(
        "--group-timeout",
        type=float,
        default=600.0,
        help="with --group-size: seconds a group waits for all its repeats; past it every member fails, naming the "
        "group (default 600)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        help=f"connections held at once; one more is answered 503 (default {DEFAULT_MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=DEFAULT_IDLE_SECONDS,
        help="a connection whose request has not arrived this long after it opened (or after its last answer) is "
        f"closed (default {DEFAULT_IDLE_SECONDS:g})",
    )
    parser.add_argument(
        "--nemo-gym-head",
        help="a NeMo Gym head server URL: its global config's policy_base_url (the trainer's engines) becomes the "
        "proxy's only route, read again before every group; without it the config NeMo Gym started this server with "
        f"(${ENV_CONFIG}) is read, and without either the proxy's routes are left as they are",
    )
    parser.add_argument("--name", default="polar_agent", help="the agent name rows use (+agent_name=NAME)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--run-id", default=time.strftime("ng%Y%m%d%H%M%S"), help="prefix of every task id")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a /run waits for its session")
    args = parser.parse_args(argv)
    if not args.control_token:
        parser.error("--control-token (or $POLAR_CONTROL_TOKEN) is required")
    try:
        row_fields = parse_row_fields(args.row_fields)
    except ValueError as err:
        parser.error(str(err))
    if args.group_size < 0 or args.gather_seconds <= 0 or args.group_timeout <= 0:
        parser.error("--group-size must be >= 0, --gather-seconds and --group-timeout > 0")
    if args.max_connections < 1 or args.idle_seconds <= 0:
        parser.error("--max-connections must be >= 1 and --idle-seconds > 0")
    template = {}
    if args.task_template:
        with open(args.task_template, encoding="utf-8") as f:
            template = json.load(f)
        if not isinstance(template, dict):
            parser.error(f"--task-template {args.task_template}: must hold a JSON object of TaskRequest fields")
    token = args.agent_token or secrets.token_hex(16)
    control = ControlClient(args.control, args.control_token)
    routes = None
    try:
        source = head_config(args.nemo_gym_head) if args.nemo_gym_head else env_config()
        if source is not None:
            routes = PolicyRoutes(control, source)
            # At start: a Polar that cannot route to the trainer's policy stops the run here.
            print(f"polar nemo_gym agent: Polar routes to the policy {routes()}", flush=True)
    except PluginError as err:
        print(f"polar-nemo-gym: {err}", file=sys.stderr, flush=True)
        return 2
    agent = PolarAgent(
        control,
        template,
        args.run_id,
        timeout_s=args.timeout,
        row_fields=row_fields,
        gather_s=args.gather_seconds,
        group_size=args.group_size,
        group_timeout_s=args.group_timeout,
        routes=routes,
    )
    server = make_server(
        agent, args.host, args.port, args.name, token, max_connections=args.max_connections, idle_s=args.idle_seconds
    )
    host, port = str(server.server_address[0]), int(server.server_address[1])
    # The line a script or test waits for; the head_server NeMo Gym is pointed at.
    print(f"polar nemo_gym agent {args.name} at http://{host}:{port} (run id {args.run_id})", flush=True)
    if not args.agent_token:
        print(f"agent token {token}: \"+head_server={{host:'polar:{token}@{host}',port:{port}}}\"", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

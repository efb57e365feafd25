"""Runs mini-swe-agent's DefaultAgent headless for a Polar session and prints one JSON line.

The `mini` CLI is interactive (first-run setup prompt, confirm mode, rich console output, no
machine-readable result), so the preset drives the library the way `mini` does: the builtin
mini.yaml config, the litellm model (OpenAI Chat Completions with a `bash` tool) pointed at the
proxy, a local environment in the work dir. Settings come from the JSON file named in argv[1];
the API key from POLAR_API_KEY (never written to a file).
"""

import json
import os
import sys

from minisweagent.agents import get_agent
from minisweagent.config import get_config_from_spec
from minisweagent.environments import get_environment
from minisweagent.models import get_model
from minisweagent.utils.serialize import recursive_merge


# How the agent itself ended a run: each is the policy's outcome, for the judge to score (a session
# that ran out of steps or kept writing unparseable actions earns its 0, and RL learns from that).
# Anything else (an exception: the proxy unreachable, a crash) is the harness failing: exit 1.
AGENT_ENDS = ("Submitted", "LimitsExceeded", "RepeatedFormatError", "TimeExceeded")
# The model class -> the builtin config it is meant with.
BASE_CONFIGS = {"litellm": "mini.yaml", "litellm_textbased": "mini_textbased.yaml"}


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        settings = json.load(f)
    model_class = settings["config"].get("model", {}).get("model_class", "litellm")
    if model_class not in BASE_CONFIGS:
        print(f"mini_swe_agent: config.model.model_class {model_class!r} is not one of {sorted(BASE_CONFIGS)}"
              " (only these talk to Polar's proxy)", file=sys.stderr)  # fmt: skip
        return 2
    config = recursive_merge(get_config_from_spec(BASE_CONFIGS[model_class]), settings["config"])
    model_config = recursive_merge(
        config.get("model", {}),
        {
            "model_class": model_class,
            # litellm's `openai/` prefix: Chat Completions at api_base, the rest of the name sent as is.
            "model_name": f"openai/{settings['model']}",
            "cost_tracking": "ignore_errors",
            "model_kwargs": {"api_base": settings["base_url"], "api_key": os.environ["POLAR_API_KEY"]},
        },
    )
    agent_config = recursive_merge(config.get("agent", {}), {"output_path": settings["trajectory_path"]})
    env_config = recursive_merge(config.get("environment", {}), {"cwd": os.getcwd()})
    agent = get_agent(
        get_model(config=model_config),
        get_environment(env_config, default_type="local"),
        agent_config,
        default_type="default",
    )
    result = agent.run(sys.argv[2])
    exit_status = result.get("exit_status", "")
    print(json.dumps({"polar_result": {"exit_status": exit_status, "submission": result.get("submission", "")}}))
    return 0 if exit_status in AGENT_ENDS else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""How often a model takes each step of a tool-lookup task, asked straight through an engine.

    bash scripts/engine.sh up --preset smollm2 --port 8711
    python examples/experiments/tool_lookup_probe.py --engine http://127.0.0.1:8711 [--n 32]

Before spending an hour of CPU on a learning run, this measures whether the policy ever does what
the reward pays for: per prompt variant and temperature, the share of replies holding exactly one
fenced command (what mini-swe-agent's text-based mode can run), the share whose command reads the
named file, and, given that file's content as mini-swe-agent shows it, the share that then writes
exactly the right value. GRPO learns only from groups whose samples differ; a step no sample ever
takes gives it nothing to reinforce. docs/experiments.md has the numbers for SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.request
from typing import Any

from tool_lookup_tasks import ACTION_REGEX, INSTANCE_TEMPLATE, SYSTEM_TEMPLATE, observation

TASK = "Look up timeout in settings/server.cfg and write its value, and nothing else, to answer.txt."
READ = "cat settings/server.cfg"
OBSERVATION = observation("mode = beta\ntimeout = 48213\nowner = gamma\n")
WRITE = re.compile(r'echo "?48213"? > answer\.txt')
# The harness's own action pattern (the tasks' mini-swe-agent config): what it would run.
BLOCK = re.compile(ACTION_REGEX, re.S)


def shipped() -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM_TEMPLATE},
            {"role": "user", "content": INSTANCE_TEMPLATE.replace("{{task}}", TASK)}]  # fmt: skip


def own_command_as_example() -> list[dict[str, str]]:
    """The shipped prompt with its example command (``cat data/x.cfg``, which the model copies as
    it stands) replaced by this task's own: an easier task, the first step handed over."""
    return [{"role": "system", "content": SYSTEM_TEMPLATE},
            {"role": "user", "content": INSTANCE_TEMPLATE.replace("{{task}}", TASK).replace("cat data/x.cfg", READ)}]  # fmt: skip


def exact_command() -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM_TEMPLATE},
            {"role": "user", "content": f"{TASK}\n\nFirst reply with exactly:\n```bash\n{READ}\n```"}]  # fmt: skip


def worked_example() -> list[dict[str, str]]:
    example = ("Example.\nTask: Look up name in conf/a.ini and write its value to answer.txt.\nReply 1:\n```bash\n"
               "cat conf/a.ini\n```\nOutput 1:\nname = 4821\nmode = beta\nReply 2:\n```bash\necho 4821 > answer.txt\n```\n\n")  # fmt: skip
    return [{"role": "system", "content": SYSTEM_TEMPLATE}, {"role": "user", "content": example + "Task: " + TASK}]


def two_shot_turns() -> list[dict[str, str]]:
    """Two solved tasks as real chat turns (mini-swe-agent's templates cannot express this)."""
    msgs = [{"role": "system", "content": SYSTEM_TEMPLATE}]
    for file, key, value, other in (("conf/a.ini", "name", 4821, "mode = beta"), ("data/b.cfg", "size", 730, "level = gamma")):
        msgs += [{"role": "user", "content": f"Look up {key} in {file} and write its value to answer.txt."},
                 {"role": "assistant", "content": f"```bash\ncat {file}\n```"},
                 {"role": "user", "content": f"{other}\n{key} = {value}"},
                 {"role": "assistant", "content": f"```bash\necho {value} > answer.txt\n```"}]  # fmt: skip
    return msgs + [{"role": "user", "content": TASK}]


VARIANTS = {"shipped prompt": shipped, "the task's own command as the example": own_command_as_example,
            "exact command given": exact_command, "worked example in the prompt": worked_example,
            "two solved tasks as chat turns": two_shot_turns}  # fmt: skip


def sample(engine: str, messages: list[dict[str, str]], n: int, temperature: float, max_tokens: int) -> list[str]:
    body = {"model": "policy", "messages": messages, "n": n, "temperature": temperature, "max_tokens": max_tokens}
    req = urllib.request.Request(f"{engine}/v1/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as res:
        answer: dict[str, Any] = json.load(res)
    return [c["message"]["content"] or "" for c in answer["choices"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", required=True, help="an OpenAI-compatible engine serving the model as `policy`")
    ap.add_argument("--n", type=int, default=32, help="samples per variant and temperature")
    ap.add_argument("--temperatures", default="1.0,0.7")
    ap.add_argument("--max-tokens", type=int, default=48)
    a = ap.parse_args()
    print("| prompt | T | one fenced command | reads the file | then writes the value |")
    print("| --- | --- | --- | --- | --- |")
    for name, build in VARIANTS.items():
        for t in (float(x) for x in a.temperatures.split(",")):
            first = [BLOCK.findall(r) for r in sample(a.engine, build(), a.n, t, a.max_tokens)]
            one = sum(len(b) == 1 for b in first)
            reads = sum(len(b) == 1 and b[0].strip() == READ for b in first)
            after = build() + [{"role": "assistant", "content": f"```bash\n{READ}\n```"}, {"role": "user", "content": OBSERVATION}]
            second = [BLOCK.findall(r) for r in sample(a.engine, after, a.n, t, a.max_tokens)]
            writes = sum(len(b) == 1 and WRITE.fullmatch(b[0].strip()) is not None for b in second)
            print(f"| {name} | {t} | {one}/{a.n} | {reads}/{a.n} | {writes}/{a.n} |", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The `tool-lookup` task family: the answer exists only in the sandbox.

    python examples/experiments/tool_lookup_tasks.py [--train 64] [--held-out 16] [--seed 7] [--out DIR]

Each task's prepare step writes a small settings file (a few ``key = value`` lines) into the
session's work dir, with a random value for the key the instruction names. The instruction names
the file and the key but never the value, so the agent can know it only from a command's output:
read the file (a tool call), see the output, then write the value to ``answer.txt`` (a second
call) and submit. The judge (``test_on_output``, in a fresh runtime holding the agent's outputs)
checks ``answer.txt`` against the value; the agent never sees the judge's command.

Training and held-out tasks share no file name, no key, no value and no phrasing template, so
held-out success measures the skill (look it up with a tool, then use what came back), not
memorised answers. The harness is mini-swe-agent (PyPI, the `mini_swe_agent` preset): one
``bash`` tool, the tool's output sent back as a tool message between model calls; every later
call is spliced token-in-token-out (``agent.token_in_token_out``), so the tool output sits in
the sample as context (loss mask 0), never trained.

Writes DIR/train.jsonl and DIR/held-out.jsonl (default: this script's folder, tool-lookup/).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Disjoint pools: (folder/file names, keys, phrasing templates) for each side.
TRAIN = {
    "files": ["config/app.ini", "settings/server.cfg", "etc/service.conf", "conf/main.ini", "setup/env.cfg",
              "opts/runtime.conf"],
    "keys": ["port", "timeout", "workers", "retries", "buffer", "threads", "limit", "interval"],
    "templates": [
        "The file {file} sets {key}. What is the value of {key}? Write just the value to answer.txt.",
        "Look up {key} in {file} and write its value, and nothing else, to answer.txt.",
        "Find the value of {key} in the file {file}. Save only that value in answer.txt.",
    ],
}
HELD_OUT = {
    "files": ["data/params.txt", "vars/site.properties", "local/machine.env", "cfg/cluster.toml"],
    "keys": ["seed", "quota", "depth", "capacity", "offset"],
    "templates": [
        "Which value does {file} give for {key}? Put only that value into answer.txt.",
        "Read {key} from {file}; answer.txt must contain its value alone.",
    ],
}
# Keys that fill the rest of each file, so the value is one line among several.
FILLER = ["name", "mode", "level", "region", "owner"]

# mini-swe-agent's own instance prompt, shortened for a 135M model, with the tool-call format
# spelled out: SmolLM2's chat template does not render the request's tool list, so the model sees
# the format only here (vLLM's `hermes` parser reads it back into a tool call).
MINI_TEMPLATE = (
    "{{task}}\n\nYou can run one shell command per reply. To run a command, reply with exactly:\n"
    '<tool_call>\n{"name": "bash", "arguments": {"command": "cat FILE"}}\n</tool_call>\n'
    "First read the file, then write the value with echo VALUE > answer.txt, "
    "then run echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
)


def values(rng: random.Random, n: int, taken: set[int]) -> list[int]:
    out: list[int] = []
    while len(out) < n:
        v = rng.randrange(1000, 100000)
        if v not in taken:
            taken.add(v)
            out.append(v)
    return out


def task(task_id: str, instruction: str, file: str, key: str, value: int, rng: random.Random, *,
         max_tokens: int, step_limit: int, runtime: str) -> dict[str, Any]:  # fmt: skip
    lines = [f"{k} = {rng.choice(['alpha', 'beta', 'gamma', 'delta'])}" for k in rng.sample(FILLER, 3)]
    lines.insert(rng.randrange(len(lines) + 1), f"{key} = {value}")
    folder = file.rsplit("/", 1)[0]
    write = f"mkdir -p {shlex.quote(folder)} && printf '%s\\n' {' '.join(shlex.quote(l) for l in lines)} > {shlex.quote(file)}"
    return {
        "task_id": task_id,
        "num_samples": 1,  # the trainer's group size replaces it
        "timeout_seconds": 180,
        "instruction": instruction,
        "agent": {
            "harness": "mini_swe_agent",
            "settings": {
                "max_retries": 0,
                # Merged over mini-swe-agent's own mini.yaml: a short instance prompt for a small
                # context, and at most `step_limit` model calls a session.
                "config": {"agent": {"instance_template": MINI_TEMPLATE, "step_limit": step_limit, "cost_limit": 0}},
            },
            "sampling": {"max_tokens": max_tokens},
            "token_in_token_out": True,
        },
        "runtime": {"backend": runtime, "prepare": [write]},
        "evaluator": {
            "strategy": "test_on_output",
            "config": {
                # The value is here only: in the judge's command, run after the agent finished.
                "command": f"test \"$(tr -d ' \\n\\r\\t' < answer.txt 2>/dev/null)\" = {value}",
            },
        },
        "metadata": {"family": "tool-lookup", "file": file, "key": key},
    }


def generate(n_train: int, n_held: int, seed: int, *, max_tokens: int = 96, step_limit: int = 4,
             runtime: str = "bwrap") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    rng = random.Random(seed)
    taken: set[int] = set()
    sides = []
    for prefix, pool, n in (("lookup", TRAIN, n_train), ("heldout-lookup", HELD_OUT, n_held)):
        tasks = []
        for i, value in enumerate(values(rng, n, taken)):
            file, key, template = rng.choice(pool["files"]), rng.choice(pool["keys"]), rng.choice(pool["templates"])
            instruction = template.format(file=file, key=key)
            tasks.append(task(f"{prefix}-{i}", instruction, file, key, value, rng,
                              max_tokens=max_tokens, step_limit=step_limit, runtime=runtime))  # fmt: skip
        sides.append(tasks)
    # TRL's plug-in matches a prompt to its task by instruction: one task per instruction.
    for tasks in sides:
        seen: dict[str, int] = {}
        for t in tasks:
            seen[t["instruction"]] = seen.get(t["instruction"], 0) + 1
            if seen[t["instruction"]] > 1:
                t["instruction"] += f" (task {seen[t['instruction']]})"
    return sides[0], sides[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=64)
    ap.add_argument("--held-out", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7, help="draws files, keys, templates and values")
    ap.add_argument("--max-tokens", type=int, default=96, help="tokens per model call")
    ap.add_argument("--step-limit", type=int, default=4, help="model calls per session at most")
    ap.add_argument("--runtime", default="bwrap")
    ap.add_argument("--out", type=Path, default=HERE / "tool-lookup")
    a = ap.parse_args()
    train, held = generate(a.train, a.held_out, a.seed, max_tokens=a.max_tokens, step_limit=a.step_limit, runtime=a.runtime)
    a.out.mkdir(parents=True, exist_ok=True)
    for name, tasks in (("train.jsonl", train), ("held-out.jsonl", held)):
        (a.out / name).write_text("".join(json.dumps(t) + "\n" for t in tasks))
    print(f"{len(train)} training and {len(held)} held-out tasks in {a.out}")


if __name__ == "__main__":
    main()

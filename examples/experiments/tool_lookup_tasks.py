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
memorised answers. The harness is mini-swe-agent (PyPI, the `mini_swe_agent` preset) in its own
text-based mode: the command is a fenced block in the reply, its output comes back as the next
message before the next model call; every later call is spliced token-in-token-out
(``agent.token_in_token_out``), so the tool output sits in the sample as context (loss mask 0),
never trained.

Writes DIR/train.jsonl, DIR/held-out.jsonl and DIR/demonstrations.jsonl (default: this script's
folder, tool-lookup/). The demonstrations (``[warmup]`` in the experiment file, docs/experiments.md)
are solved sessions of tasks of a third pool, sharing no file or key with the training or held-out
tasks: read the file, write the value it showed, submit.
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
# Demonstrations for `[warmup]` come from a third pool: no file or key of a training or held-out
# task. Demonstrating the training tasks' own files solved every training session (reward 1.0 in
# all 16 of a step, so no group had spread) while held-out stayed at 6 of 16; here RL trains on
# files never demonstrated, which is what held-out asks too.
DEMO = {
    "files": ["app/settings.ini", "srv/daemon.conf", "run/job.cfg", "misc/tool.conf"],
    "keys": ["width", "height", "ratio", "delay", "version"],
    "templates": TRAIN["templates"],
}
# Keys that fill the rest of each file, so the value is one line among several.
FILLER = ["name", "mode", "level", "region", "owner"]

# mini-swe-agent's own text-based mode (`litellm_textbased`, its builtin mini_textbased.yaml):
# the action is a fenced ```bash block in the reply, run as is, its output sent back as the next
# user message. SmolLM2's chat template does not render a request's tool list, so its tool-call
# mode never saw the tool (0 calls in 23 replies, docs/experiments.md); a fenced block is a form
# it writes unprompted. The prompts are the harness's own settings, shortened for a 135M model.
SYSTEM_TEMPLATE = "You are a shell agent. Each reply is one command in a ```bash block, nothing else."
INSTANCE_TEMPLATE = (
    "{{task}}\n\nReply with one command, like:\n```bash\ncat data/x.cfg\n```\n"
    "When answer.txt is written, reply:\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
)
FORMAT_ERROR = "Reply with exactly one command in a ```bash block."
# The blocks it accepts: ```bash / ```sh / ```mswea_bash_command (the harness's own) or a bare fence.
ACTION_REGEX = r"```(?:bash|sh|shell|mswea_bash_command)?[ \t]*\n(.*?)\n```"


def mini_config(step_limit: int, action_regex: str = ACTION_REGEX) -> dict[str, Any]:
    """`agent.settings.config` for mini-swe-agent, merged over its mini_textbased.yaml."""
    return {
        "model": {
            "model_class": "litellm_textbased",
            "action_regex": action_regex,
            # The builtin one is ~150 tokens of guidance a 135M model does not follow and that every
            # later prompt (and TRL's loss pass) carries.
            "format_error_template": FORMAT_ERROR,
        },
        "agent": {
            "system_template": SYSTEM_TEMPLATE,
            "instance_template": INSTANCE_TEMPLATE,
            "step_limit": step_limit,
            "cost_limit": 0,
            # A reply without a parseable action costs one call of the budget, not the session.
            "max_consecutive_format_errors": step_limit,
        },
    }


def values(rng: random.Random, n: int, taken: set[int]) -> list[int]:
    out: list[int] = []
    while len(out) < n:
        v = rng.randrange(1000, 100000)
        if v not in taken:
            taken.add(v)
            out.append(v)
    return out


def file_lines(key: str, value: int, rng: random.Random) -> list[str]:
    lines = [f"{k} = {rng.choice(['alpha', 'beta', 'gamma', 'delta'])}" for k in rng.sample(FILLER, 3)]
    lines.insert(rng.randrange(len(lines) + 1), f"{key} = {value}")
    return lines


def observation(output: str) -> str:
    """A command's result as mini-swe-agent shows it (mini_textbased.yaml's observation_template)."""
    return f"<returncode>0</returncode>\n<output>\n{output}</output>"


def demonstrations(t: dict[str, Any], lines: list[str]) -> list[dict[str, Any]]:
    """A solved session of task ``t`` as the ``[warmup]`` rows (TRL's prompt-completion), one per
    model call: read the file, write the value it showed, submit. The prompts are the ones
    mini-swe-agent sends with this task's settings."""
    agent = t["agent"]["settings"]["config"]["agent"]
    file, value = t["metadata"]["file"], lines_value(lines, t["metadata"]["key"])
    turns = [(f"cat {file}", "\n".join(lines) + "\n"), (f"echo {value} > answer.txt", ""),
             ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", None)]  # fmt: skip
    history = [{"role": "system", "content": agent["system_template"]},
               {"role": "user", "content": agent["instance_template"].replace("{{task}}", t["instruction"])}]  # fmt: skip
    rows = []
    for command, output in turns:
        reply = {"role": "assistant", "content": f"```bash\n{command}\n```"}
        rows.append({"prompt": list(history), "completion": [reply]})
        if output is not None:
            history += [reply, {"role": "user", "content": observation(output)}]
    return rows


def lines_value(lines: list[str], key: str) -> str:
    return next(line.split(" = ", 1)[1] for line in lines if line.startswith(f"{key} = "))


def task(task_id: str, instruction: str, file: str, key: str, lines: list[str], *,
         max_tokens: int, step_limit: int, runtime: str) -> dict[str, Any]:  # fmt: skip
    value = lines_value(lines, key)
    folder = file.rsplit("/", 1)[0]
    write = f"mkdir -p {shlex.quote(folder)} && printf '%s\\n' {' '.join(shlex.quote(l) for l in lines)} > {shlex.quote(file)}"
    return {
        "task_id": task_id,
        "num_samples": 1,  # the trainer's group size replaces it
        # Sessions share the engine with the whole group: at a load average of 6-13 on 2 cores, 21
        # of 48 sessions ran past 180 s (up to 3 calls of 64 tokens at about 7 tokens/s each).
        "timeout_seconds": 600,
        "instruction": instruction,
        "agent": {
            "harness": "mini_swe_agent",
            "settings": {
                "max_retries": 0,
                # At most `step_limit` model calls a session; running out of them is the
                # agent's outcome (judged, 0 unless answer.txt is right), not an error.
                "config": mini_config(step_limit),
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


def generate(n_train: int, n_held: int, seed: int, *, n_demo: int = 16, max_tokens: int = 96, step_limit: int = 4,
             runtime: str = "bwrap") -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """Training tasks, held-out tasks, and the demonstration rows of ``n_demo`` solved tasks of the
    DEMO pool (drawn last, so the other two do not depend on ``n_demo``)."""
    rng = random.Random(seed)
    taken: set[int] = set()
    sides = []
    contents: list[list[str]] = []
    for prefix, pool, n in (("lookup", TRAIN, n_train), ("heldout-lookup", HELD_OUT, n_held), ("demo-lookup", DEMO, n_demo)):
        tasks = []
        for i, value in enumerate(values(rng, n, taken)):
            file, key, template = rng.choice(pool["files"]), rng.choice(pool["keys"]), rng.choice(pool["templates"])
            instruction = template.format(file=file, key=key)
            lines = file_lines(key, value, rng)
            tasks.append(task(f"{prefix}-{i}", instruction, file, key, lines,
                              max_tokens=max_tokens, step_limit=step_limit, runtime=runtime))  # fmt: skip
            if pool is DEMO:
                contents.append(lines)
        sides.append(tasks)
    # TRL's plug-in matches a prompt to its task by instruction: one task per instruction.
    for tasks in sides:
        seen: dict[str, int] = {}
        for t in tasks:
            seen[t["instruction"]] = seen.get(t["instruction"], 0) + 1
            if seen[t["instruction"]] > 1:
                t["instruction"] += f" (task {seen[t['instruction']]})"
    demos = [row for t, lines in zip(sides[2], contents) for row in demonstrations(t, lines)]
    return sides[0], sides[1], demos


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=64)
    ap.add_argument("--held-out", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7, help="draws files, keys, templates and values")
    ap.add_argument("--max-tokens", type=int, default=96, help="tokens per model call")
    ap.add_argument("--step-limit", type=int, default=4, help="model calls per session at most")
    ap.add_argument("--runtime", default="bwrap")
    ap.add_argument("--demonstrations", type=int, default=16,
                    help="solved sessions of N tasks sharing no file or key with the others, for [warmup] (3 rows each)")
    ap.add_argument("--out", type=Path, default=HERE / "tool-lookup")
    a = ap.parse_args()
    train, held, demos = generate(a.train, a.held_out, a.seed, n_demo=a.demonstrations, max_tokens=a.max_tokens,
                                  step_limit=a.step_limit, runtime=a.runtime)  # fmt: skip
    a.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.jsonl", train), ("held-out.jsonl", held), ("demonstrations.jsonl", demos)):
        (a.out / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(train)} training and {len(held)} held-out tasks, {len(demos)} demonstration rows in {a.out}")


if __name__ == "__main__":
    main()

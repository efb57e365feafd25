"""What the model did in a tool-lookup experiment's sessions, read from the captures of its store
(OUT/store): per phase (held-out evaluation `eval0`, `eval2`, ...; training step `train-c0`, ...),
the model calls, the replies holding exactly one fenced command, the calls that read the file
the instruction names (`cat` with its path), the calls made after a command's output had shown a
value, and of those the replies writing one of the values shown. Then the first words of all
fenced commands: what the model runs instead.

    python examples/experiments/tool_lookup_sessions.py OUT/store [OUT2/store ...]

A call whose history holds no reply of the model's is a session's first, or follows a reply
mini-swe-agent dropped as unparseable (it answers with its format error instead)."""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
from pathlib import Path
from typing import Any

from tool_lookup_tasks import ACTION_REGEX

# The harness's own action pattern (the tasks' mini-swe-agent config): what it would run.
BLOCK = re.compile(ACTION_REGEX, re.S)
NAMED_FILE = re.compile(r"\b([\w-]+/[\w.-]+\.\w+)\b")
SHOWN_VALUE = re.compile(r"=\s*(\d{4,6})\b")


def phase_of(task_id: str) -> str:
    parts = task_id.split(".")
    return parts[-1] if task_id.startswith("heldout") else f"train-{parts[-2]}"


def reply_of(capture: dict[str, Any]) -> str | None:
    try:
        return str(capture["response"]["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError):
        return None  # a failed call: no reply to read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", type=Path, help="an experiment's OUT/store folder")
    a = ap.parse_args()
    commands: collections.Counter[str] = collections.Counter()
    for store in a.stores:
        by: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for path in sorted(store.glob("captures/*/*/*.json.gz")):
            capture = json.loads(gzip.open(path).read())
            reply = reply_of(capture)
            if reply is None:
                continue
            messages = capture["request"]["messages"]
            instruction = next(str(m["content"]) for m in messages if m["role"] == "user")
            named = NAMED_FILE.search(instruction)
            blocks = BLOCK.findall(reply)
            counts = by[phase_of(capture["task_id"])]
            counts["calls"] += 1
            counts["one_fenced_command"] += len(blocks) == 1
            counts["no_reply_before"] += not any(m["role"] == "assistant" for m in messages)
            reads = named and re.compile(rf"\bcat\b[^\n]*{re.escape(named.group(1))}")
            counts["reads_the_named_file"] += bool(reads and any(reads.search(b) for b in blocks))
            outputs = "\n".join(str(m["content"]) for m in messages if m["role"] == "user" and "<output>" in str(m["content"]))
            shown = set(SHOWN_VALUE.findall(outputs))
            if shown:
                counts["after_a_value_was_shown"] += 1
                counts["writes_a_shown_value"] += any(v in reply for v in shown)
            for b in blocks:
                words = b.split()
                commands[words[0] if words else "(empty)"] += 1
        for phase in sorted(by):
            print(f"{store}: {phase} {dict(by[phase])}")
    print("first words of the fenced commands:", commands.most_common(12))


if __name__ == "__main__":
    main()

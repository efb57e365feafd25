#!/usr/bin/env python3
"""The short-answer family of docs/pretrained-on-cpu.md as task files for the experiment command:

    python examples/experiments/short_answer_tasks.py [--held-out 16] [--max-tokens 32] [--out DIR]

Writes DIR/train.jsonl and DIR/held-out.jsonl (default: short-answer/ beside this script) from
examples/rl/answer_tasks.py's fixed split (held-out items share no word and no number pair with
training). One model call a session (the `shell` harness running examples/agents/two-turn-agent.mjs),
judged by examples/rl/answer-score.mjs in a fresh runtime.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "rl"))

from answer_tasks import split, task  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", type=int, default=16, help="held-out items per family (3 families)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--runtime", default="bwrap")
    ap.add_argument("--out", type=Path, default=HERE / "short-answer")
    a = ap.parse_args()
    train, held = split(a.held_out)
    a.out.mkdir(parents=True, exist_ok=True)
    for name, items in (("train.jsonl", train), ("held-out.jsonl", held)):
        (a.out / name).write_text("".join(json.dumps(task(i, max_tokens=a.max_tokens, runtime=a.runtime)) + "\n" for i in items))
    print(f"{len(train)} training and {len(held)} held-out tasks in {a.out}")


if __name__ == "__main__":
    main()

"""The short-answer task suite SmolLM2-135M-Instruct trains on in
examples/experiments/short-answer.toml (examples/experiments/short_answer_tasks.py writes its task
files from this): three families (the first letter of a word, a one-digit sum, the bigger of two
numbers) split once into training and held-out items that share no word and no number pair, so
held-out success measures what the model learned to do, not answers it memorised.

Each item is a Polar task: the `shell` harness runs examples/agents/two-turn-agent.mjs for one
call through the proxy, and the `test_on_output` evaluator runs examples/rl/answer-score.mjs in a
fresh runtime with the expected answer on its command line (the agent never sees it)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCORER = ROOT / "examples" / "rl" / "answer-score.mjs"
# No word starts with "a" or "i": those letters stand alone as words in English sentences, so the
# scorer's "last standalone letter" would find them in an answer that never named the letter.
WORDS = (
    "green river house table music zebra lemon cloud tiger paper mouse night bread chair dance "
    "eagle fruit ghost horse juice kite lunch money nurse ocean piano queen robot snake train "
    "uncle voice water yellow box young baker candle desert forest garden hammer jacket kettle "
    "ladder mirror needle orange pencil rabbit silver tomato violin window basket cookie dragon "
    "feather guitar honey jungle koala lizard magnet noodle parrot rocket sugar turtle velvet wagon"
).split()
SPLIT_SEED = 20261127  # fixed: the same split for every training seed


@dataclass(frozen=True)
class Item:
    family: str
    key: str
    instruction: str
    kind: str  # what answer-score.mjs extracts: "letter" or "number"
    answer: str

    @property
    def split_key(self) -> str:
        """Items with one split key land on one side: 3 + 4 and 4 + 3 are one question."""
        if self.family == "first-letter":
            return self.key
        a, b = sorted(int(n) for n in self.key.replace("plus", "vs").split("vs"))
        return f"{a},{b}"


def items() -> list[Item]:
    out = [
        Item("first-letter", w, f"What is the first letter of the word '{w}'? Answer with just the letter.", "letter", w[0])
        for w in WORDS
    ]
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    out += [Item("sum", f"{a}plus{b}", f"What is {a} + {b}? Answer with just the number.", "number", str(a + b)) for a, b in pairs]
    out += [
        Item("bigger", f"{a}vs{b}", f"Which number is bigger, {a} or {b}? Answer with just the number.", "number", str(max(a, b)))
        for a, b in pairs
        if a != b
    ]
    return out


def split(per_family_held_out: int) -> tuple[list[Item], list[Item]]:
    """(training, held-out): per family, a fixed random `per_family_held_out` items are held out."""
    rng = random.Random(SPLIT_SEED)
    train: list[Item] = []
    held: list[Item] = []
    for family in ("first-letter", "sum", "bigger"):
        group = [i for i in items() if i.family == family]
        keys = sorted({i.split_key for i in group})
        rng.shuffle(keys)
        chosen: set[str] = set()
        for key in keys:
            if sum(i.split_key in chosen for i in group) >= per_family_held_out:
                break
            chosen.add(key)
        held += [i for i in group if i.split_key in chosen][:per_family_held_out]
        train += [i for i in group if i.split_key not in chosen]
    return train, held


def task(item: Item, *, max_tokens: int, runtime: str = "bwrap") -> dict[str, Any]:
    return {
        "task_id": f"{item.family}-{item.key}",
        "num_samples": 1,  # the TRL plug-in sets num_generations
        "timeout_seconds": 120,
        "instruction": item.instruction,
        "agent": {
            "harness": "shell",
            "settings": {"command": "node {{polar_root}}/examples/agents/two-turn-agent.mjs {{instruction}}"},
            "env": {"AGENT_FOLLOW_UP": ""},  # one call: the answer is the model's first turn
            "sampling": {"max_tokens": max_tokens},
            "token_in_token_out": True,
        },
        "runtime": {"backend": runtime},
        "evaluator": {
            "strategy": "test_on_output",
            "config": {
                "command": f"node answer-score.mjs {item.kind} {item.answer}",
                # inline: a runner reads no host files for tasks (only from --files-dir)
                "files": {"answer-score.mjs": SCORER.read_text()},
                "expected_lines": ["ok"],
            },
        },
    }

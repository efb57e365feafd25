"""The recipe stamp every model builder of the engine lane writes into its model dir.

A model is reused only when its stamp equals the recipe's: the sha256 of the builder's own source
and of every input file it reads (tokenizers, wheels), plus its options. Changing any of them
rebuilds the model; nothing else does.
"""

import hashlib
import json
from pathlib import Path

STAMP = "polar-recipe.json"


def recipe(builder: Path, inputs: list[Path], **options: object) -> dict:
    digest = hashlib.sha256()
    for path in [builder, Path(__file__), *inputs]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return {"recipe": digest.hexdigest(), **options}


def is_current(out: Path, want: dict, weights: str = "model.safetensors") -> bool:
    try:
        have = json.loads((out / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return have == want and (out / weights).exists()


def write(out: Path, stamp: dict) -> None:
    (out / STAMP).write_text(json.dumps(stamp) + "\n")

"""The recipe stamp every model builder of the engine lane writes into its model dir, and the
build-then-swap (`publish`) and command line (`main`) builders share.

A model is reused only when its stamp equals the recipe's: the sha256 of the builder's own source
and of every input file it reads (tokenizers, wheels), plus its options. Changing any of them
rebuilds the model; nothing else does.
"""

import argparse
import hashlib
import json
import shutil
from collections.abc import Callable
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


def publish(out: Path, stamp: dict, fill: Callable[[Path], None]) -> None:
    """Writes the model into OUT.tmp with `fill`, stamps it, then swaps it in: a reader never sees half a model."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    fill(tmp)
    # generation_config.json would hand the engine sampling defaults nobody asked for.
    (tmp / "generation_config.json").unlink(missing_ok=True)
    write(tmp, stamp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main(builder: Path, inputs: list[Path], fill: Callable[[Path, int], None], label: str) -> None:
    """`python make_X.py OUT_DIR [--seed N]`: builds OUT_DIR with `fill(dir, seed)` unless its stamp is current."""
    parser = argparse.ArgumentParser(description=f"Builds the engine lane's {label}.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stamp = recipe(builder, inputs, seed=args.seed)
    if is_current(args.out, stamp):
        print(f"{label} up to date: {args.out}")
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    publish(args.out, stamp, lambda tmp: fill(tmp, args.seed))
    print(f"{label} built: {args.out}")

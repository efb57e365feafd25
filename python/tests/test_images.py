"""Images of computer-use traces: the reader returns them and the verl and TRL adapters fill their
multimodal inputs, checked with verl's and TRL's own code (verl ``extract_multi_modal_inputs``,
TRL ``split_pixel_values_by_grid``) and a real Qwen2-VL image processor.

The store comes from a real session through the proxy (support/image-session.ts): three turns,
each adding a screenshot and re-sending the earlier ones; one merged trace with three images.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, node, trainer_module

from polar_rollouts import (
    BadImageError,
    ImageMissingError,
    image_key,
    load_images,
    read_images,
    read_results,
    read_shard,
)
from polar_rollouts.adapters.trl import to_grpo_inputs, to_hf_dataset, to_hf_rows
from polar_rollouts.adapters.verl import to_data_proto, to_verl_tensors

PAD = 151643
verl_model = trainer_module("verl.utils.model", "verl is installed by scripts/setup-python.sh")
PIL_Image = pytest.importorskip("PIL.Image")
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


# Issue 49, item 3: the readers are bounded whatever a session sent. A bad image marks its trace
# and leaves it out; the batch goes on. Bombs are refused on their header, before any decoding.


def _png_declaring(width: int, height: int) -> bytes:
    """A well-formed PNG whose header declares ``width`` x ``height`` 1-bit pixels, with a few
    bytes of pixel data: what a decoder reads before it allocates."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b"")


def _with_blobs(store: Path, blobs: list[bytes]) -> list[str]:
    hashes = []
    for data in blobs:
        h = hashlib.sha256(data).hexdigest()
        (store / image_key(h)).write_bytes(data)
        hashes.append(h)
    return hashes


@pytest.fixture()
def hostile(session: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """A copy of the session's store with the attack's images beside its own screenshots."""
    import dataclasses

    copy = tmp_path / "store"
    shutil.copytree(session["store"], copy)
    (good,) = read_shard(copy, "screens")
    tiff = io.BytesIO()
    PIL_Image.new("RGB", (4, 4)).save(tiff, format="TIFF")
    fake_png = b"\x89PNG\r\n\x1a\n" + (7).to_bytes(4, "big")
    bomb, big, fake, tif = _with_blobs(
        copy, [_png_declaring(50_000, 50_000), _png_declaring(13_000, 13_000), fake_png, tiff.getvalue()]
    )

    def trace(name: str, hashes: list[str]) -> Any:
        return dataclasses.replace(good, session_id=name, image_hashes=hashes)

    return {
        "store": copy,
        "good": good,
        "bomb": trace("bomb", [bomb]),
        "repeated": trace("repeated", [big] * 300),
        "fake": trace("fake", [fake]),
        "tiff": trace("tiff", [tif]),
    }


def test_bombs_and_undecodable_images_mark_their_trace_not_the_batch(hostile: dict[str, Any]) -> None:
    store = hostile["store"]
    bad = [hostile[k] for k in ("bomb", "repeated", "fake", "tiff")]
    with pytest.warns(UserWarning, match="left out"):
        rows = to_hf_rows([bad[0], hostile["good"], *bad[1:]], raw_logprobs="warn", image_store=store)
    assert [r["session_id"] for r in rows] == [hostile["good"].session_id]
    assert [img.size for img in rows[0]["images"]] == [(48, 30), (56, 30), (64, 30)]
    errors = {t.session_id: t.image_error for t in bad}
    assert "50000x50000" in errors["bomb"] or "DecompressionBomb" in errors["bomb"]
    assert "13000x13000 pixels, over max_pixels" in errors["repeated"]
    assert "does not decode" in errors["fake"] and "does not decode" in errors["tiff"]
    assert hostile["good"].image_error is None
    with pytest.raises(BadImageError, match="13000x13000"):
        load_images(store, hostile["repeated"])


def test_verl_leaves_out_a_bombed_trace(hostile: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    with pytest.warns(UserWarning, match="left out bomb trace"):
        _, non_tensors, _ = to_verl_tensors(
            [hostile["good"], hostile["bomb"]], pad_token_id=PAD, raw_logprobs="warn", image_store=hostile["store"]
        )
    assert list(non_tensors["session_id"]) == [hostile["good"].session_id]


def test_repeats_decode_once_and_a_trace_is_bounded_in_pixels(hostile: dict[str, Any]) -> None:
    import dataclasses

    store = hostile["store"]
    good = hostile["good"]
    many = dataclasses.replace(good, image_hashes=good.image_hashes * 100)
    imgs = load_images(store, many)
    assert len(imgs) == 300 and len({id(i) for i in imgs}) == 3
    assert imgs[0] is imgs[3] is imgs[297]
    # 48x30 + 56x30 + 64x30 = 5040 pixels: a trace bound below that refuses it.
    with pytest.raises(BadImageError, match="max_trace_pixels"):
        load_images(store, good, max_trace_pixels=5000)
    assert len(load_images(store, good, max_trace_pixels=5040)) == 3

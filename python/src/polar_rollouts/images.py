"""The images of a trace: each stored once at ``blobs/sha256/{hash}`` by the proxy, listed in the
trace's ``image_hashes`` in the order the engine saw them (docs/computer-use.md)."""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Sequence
from typing import Any

from .adapters.optional_imports import import_extra
from .store import Store, open_store
from .trace import Trace

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ImageMissingError(LookupError):
    """A trace names an image the store does not hold (or holds with other bytes)."""


def image_key(sha256: str) -> str:
    if not _SHA256.match(sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return f"blobs/sha256/{sha256}"


def read_images(location: str | os.PathLike[str] | Store, trace: Trace) -> list[bytes]:
    """The trace's images as the bytes the harness sent (PNG, JPEG, GIF or WebP), in engine order;
    repeats kept. Each is checked against its hash."""
    store = open_store(location)
    cache: dict[str, bytes] = {}
    out: list[bytes] = []
    for h in trace.image_hashes:
        if h not in cache:
            data = store.get(image_key(h))
            where = f"{trace.session_id} trace {trace.trace_index}"
            if data is None:
                raise ImageMissingError(f"{where}: image sha256:{h} is not in the store ({image_key(h)})")
            if hashlib.sha256(data).hexdigest() != h:
                raise ImageMissingError(f"{where}: the bytes at {image_key(h)} do not hash to their name")
            cache[h] = data
        out.append(cache[h])
    return out


def load_images(location: str | os.PathLike[str] | Store, trace: Trace) -> list[Any]:
    """``read_images`` as RGB ``PIL.Image.Image`` objects (what trainers' processors take)."""
    image_mod = import_extra("PIL.Image", extra="images", needed_by="load_images")
    out = []
    for data in read_images(location, trace):
        img = image_mod.open(io.BytesIO(data))
        img.load()
        out.append(img.convert("RGB"))
    return out


def traces_images(
    traces: Sequence[Trace], image_store: str | os.PathLike[str] | Store | None, needed_by: str
) -> list[list[Any]] | None:
    """Each trace's PIL images, or None when no trace has any. A trace with images and no store to
    read them from is refused by name: training it without them would not be the engine's input."""
    if not any(t.image_hashes for t in traces):
        return None
    if image_store is None:
        t = next(t for t in traces if t.image_hashes)
        raise ValueError(
            f"{needed_by}: {t.session_id} trace {t.trace_index} has {len(t.image_hashes)} images; "
            "pass image_store= (the store the proxy wrote them to)"
        )
    store = open_store(image_store)
    return [load_images(store, t) for t in traces]

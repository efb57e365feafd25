"""The images of a trace: each stored once at ``blobs/sha256/{hash}`` by the proxy, listed in the
trace's ``image_hashes`` in the order the engine saw them (docs/computer-use.md).

Reading is bounded whatever a session sent: an image is opened only as PNG, JPEG, GIF or WebP, its
size is read from its header and checked against ``max_pixels`` before any pixel is decoded, a
trace's distinct images may hold at most ``max_trace_pixels`` together, and an image repeated in a
trace (or across the traces of one ``traces_images`` call) is decoded once. A trace whose images
cannot be read within those bounds is marked (``Trace.image_error``) and left out of the batch by
the adapters; it never fails the others."""

from __future__ import annotations

import hashlib
import io
import os
import re
import warnings
from collections.abc import Sequence
from typing import Any

from .adapters.optional_imports import import_extra
from .store import Store, open_store
from .trace import Trace

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# The formats the proxy stores; Pillow's other plug-ins (EPS runs Ghostscript) are never tried.
_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
# As the proxy's --max-image-pixels default: 4096x4096 (a 5K screenshot is 14.7 Mpx).
DEFAULT_MAX_PIXELS = 4096 * 4096
# A trace's distinct images together: 256 Mpx, 768 MiB as RGB (ten 4K screenshots are 83 Mpx).
DEFAULT_MAX_TRACE_PIXELS = 256 * 1024 * 1024


class ImageMissingError(LookupError):
    """A trace names an image the store does not hold (or holds with other bytes)."""


class BadImageError(ValueError):
    """A trace's image does not decode as PNG, JPEG, GIF or WebP, or is over a pixel bound."""


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
            cache[h] = _read_blob(store, trace, h)
        out.append(cache[h])
    return out


def load_images(
    location: str | os.PathLike[str] | Store,
    trace: Trace,
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_trace_pixels: int = DEFAULT_MAX_TRACE_PIXELS,
    cache: dict[str, Any] | None = None,
) -> list[Any]:
    """``read_images`` as RGB ``PIL.Image.Image`` objects (what trainers' processors take), in
    engine order. Each distinct image is decoded once (repeats are the same object); ``cache``,
    keyed by digest, shares decoded images across calls. Raises ``BadImageError`` for an image that
    does not decode or is over ``max_pixels`` (checked on its header, before decoding) or takes the
    trace's distinct images over ``max_trace_pixels``; ``ImageMissingError`` for one not stored."""
    image_mod = import_extra("PIL.Image", extra="images", needed_by="load_images")
    store = open_store(location)
    cache = {} if cache is None else cache
    where = f"{trace.session_id} trace {trace.trace_index}"
    total = 0
    counted: set[str] = set()
    out = []
    for h in trace.image_hashes:
        if h not in counted:
            counted.add(h)
            if h not in cache:
                try:
                    cache[h] = _decode(image_mod, _read_blob(store, trace, h), h, where, max_pixels)
                except BadImageError as err:
                    # A bad image named by several traces is read once; each is told.
                    cache[h] = err
            if isinstance(cache[h], BadImageError):
                raise BadImageError(f"{where}: {str(cache[h]).split(': ', 1)[-1]}")
            total += cache[h].width * cache[h].height
            if total > max_trace_pixels:
                raise BadImageError(
                    f"{where}: its distinct images hold over {max_trace_pixels} pixels (max_trace_pixels)"
                )
        out.append(cache[h])
    return out


def traces_images(
    traces: Sequence[Trace], image_store: str | os.PathLike[str] | Store | None, needed_by: str
) -> tuple[list[Trace], list[list[Any]] | None]:
    """The traces whose images load, and each one's PIL images (None when no trace has any). A
    trace whose images do not load is marked (``image_error``) and left out with a warning naming
    it, so one session's images cannot fail the batch. A trace with images and no store to read
    them from is refused by name: training it without them would not be the engine's input."""
    if not any(t.image_hashes for t in traces):
        return list(traces), None
    if image_store is None:
        t = next(t for t in traces if t.image_hashes)
        raise ValueError(
            f"{needed_by}: {t.session_id} trace {t.trace_index} has {len(t.image_hashes)} images; "
            "pass image_store= (the store the proxy wrote them to)"
        )
    store = open_store(image_store)
    cache: dict[str, Any] = {}
    kept: list[Trace] = []
    images: list[list[Any]] = []
    for t in traces:
        try:
            imgs = load_images(store, t, cache=cache)
        except (ImageMissingError, BadImageError) as err:
            t.image_error = str(err)
            warnings.warn(f"{needed_by}: left out {t.session_id} trace {t.trace_index}: {err}", stacklevel=3)
            continue
        kept.append(t)
        images.append(imgs)
    if not kept:
        raise ValueError(f"{needed_by}: no trace's images could be read (first: {traces[0].image_error})")
    return kept, images


def _read_blob(store: Store, trace: Trace, h: str) -> bytes:
    where = f"{trace.session_id} trace {trace.trace_index}"
    data = store.get(image_key(h))
    if data is None:
        raise ImageMissingError(f"{where}: image sha256:{h} is not in the store ({image_key(h)})")
    if hashlib.sha256(data).hexdigest() != h:
        raise ImageMissingError(f"{where}: the bytes at {image_key(h)} do not hash to their name")
    return data


def _decode(image_mod: Any, data: bytes, h: str, where: str, max_pixels: int) -> Any:
    """One image as RGB, its size checked on the header before Pillow decodes a pixel."""
    try:
        with warnings.catch_warnings():
            # Pillow warns past its own MAX_IMAGE_PIXELS; the bound here is checked below.
            warnings.simplefilter("ignore", image_mod.DecompressionBombWarning)
            img = image_mod.open(io.BytesIO(data), formats=_FORMATS)
            width, height = img.size
            if width * height > max_pixels:
                raise BadImageError(
                    f"{where}: image sha256:{h} is {width}x{height} pixels, over max_pixels={max_pixels}"
                )
            img.load()
            return img.convert("RGB")
    except BadImageError:
        raise
    except (OSError, SyntaxError, ValueError, EOFError, MemoryError, image_mod.DecompressionBombError) as err:
        raise BadImageError(f"{where}: image sha256:{h} does not decode ({type(err).__name__}: {err})") from None

"""A PNG line chart of reward against policy version, with the standard library only (zlib).

examples/rl_on_cpu.py writes DIR/curve.png with it; no plotting package is needed on a trainer box.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

# 3x5 digits for the axis labels.
_DIGITS = {
    "0": ["111", "101", "101", "101", "111"],
    "1": ["010", "110", "010", "010", "111"],
    "2": ["111", "001", "111", "100", "111"],
    "3": ["111", "001", "111", "001", "111"],
    "4": ["101", "101", "111", "001", "001"],
    "5": ["111", "100", "111", "001", "111"],
    "6": ["111", "100", "111", "101", "111"],
    "7": ["111", "001", "001", "001", "001"],
    "8": ["111", "101", "111", "101", "111"],
    "9": ["111", "101", "111", "001", "111"],
    ".": ["000", "000", "000", "000", "010"],
}


class _Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.px = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x: int, y: int, rgb: tuple[int, int, int], r: int = 0) -> None:
        for dx in range(-r, r + 1):
            for dy in range(-r, r + 1):
                xx, yy = x + dx, y + dy
                if 0 <= xx < self.width and 0 <= yy < self.height:
                    i = (yy * self.width + xx) * 3
                    self.px[i : i + 3] = bytes(rgb)

    def line(self, x0: int, y0: int, x1: int, y1: int, rgb: tuple[int, int, int], r: int = 0) -> None:
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for k in range(n + 1):
            self.dot(round(x0 + (x1 - x0) * k / n), round(y0 + (y1 - y0) * k / n), rgb, r)

    def text(self, x: int, y: int, s: str, rgb: tuple[int, int, int], scale: int = 2) -> None:
        for ch in s:
            rows = _DIGITS.get(ch)
            if rows:
                for ry, row in enumerate(rows):
                    for rx, bit in enumerate(row):
                        if bit == "1":
                            for sx in range(scale):
                                for sy in range(scale):
                                    self.dot(x + rx * scale + sx, y + ry * scale + sy, rgb)
            x += 4 * scale

    def png(self) -> bytes:
        raw = b"".join(
            b"\x00" + bytes(self.px[y * self.width * 3 : (y + 1) * self.width * 3]) for y in range(self.height)
        )

        def chunk(tag: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def reward_curve_png(
    versions: Sequence[float],
    means: Sequence[float],
    samples: Sequence[Sequence[float]],
    width: int = 640,
    height: int = 400,
    second: tuple[Sequence[float], Sequence[float]] | None = None,
) -> bytes:
    """x: policy version; y: reward in [0, 1]. Grey dots are single samples, the blue line the mean;
    ``second`` (versions, values), e.g. held-out success, is the orange line."""
    c = _Canvas(width, height)
    left, right, top, bottom = 50, width - 20, 20, height - 40
    black, grey, blue = (0, 0, 0), (190, 190, 190), (31, 119, 180)
    c.line(left, bottom, right, bottom, black)
    c.line(left, top, left, bottom, black)
    vmax = max(max([*versions, *(second[0] if second else [])], default=1), 1)

    def xy(v: float, r: float) -> tuple[int, int]:
        return round(left + (right - left) * v / vmax), round(bottom - (bottom - top) * min(max(r, 0.0), 1.0))

    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        _, y = xy(0, tick)
        c.line(left - 4, y, left, y, black)
        c.text(8, y - 5, f"{tick:.2f}", black)
    for v in range(0, int(vmax) + 1, max(1, int(vmax) // 10)):
        x, _ = xy(v, 0)
        c.line(x, bottom, x, bottom + 4, black)
        c.text(x - 4, bottom + 10, str(v), black)
    for v, rs in zip(versions, samples):
        for r in rs:
            x, y = xy(v, r)
            c.dot(x, y, grey, 1)
    points = [xy(v, m) for v, m in zip(versions, means)]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        c.line(x0, y0, x1, y1, blue, 1)
    for x, y in points:
        c.dot(x, y, blue, 2)
    if second is not None:
        orange = (255, 127, 14)
        held = [xy(v, m) for v, m in zip(*second)]
        for (x0, y0), (x1, y1) in zip(held, held[1:]):
            c.line(x0, y0, x1, y1, orange, 1)
        for x, y in held:
            c.dot(x, y, orange, 3)
    return c.png()

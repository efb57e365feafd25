"""How busy the engine was during a rollout, from vLLM's own Prometheus ``/metrics``.

A thread samples ``vllm:num_requests_running`` / ``vllm:num_requests_waiting`` every
``interval_s`` while a window is open; the window also takes the delta of the token counters
(``vllm:generation_tokens_total``, ``vllm:prompt_tokens_total``). ``busy_share`` is the share of
samples with a request running: low means the step's time went to harness processes, sandboxes,
the judge or the trainer, not to sampling.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any

GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
COUNTERS = ("vllm:generation_tokens_total", "vllm:prompt_tokens_total")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> metric name -> value summed over its labels (one engine, one model)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        try:
            out[name] = out.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return out


def read_metrics(engine_url: str, timeout_s: float = 2.0) -> dict[str, float] | None:
    try:
        with urllib.request.urlopen(f"{engine_url}/metrics", timeout=timeout_s) as res:
            return parse_metrics(res.read().decode("utf-8", "replace"))
    except OSError:
        return None


class EngineBusy:
    """``with busy.window() as w: ...`` then ``w.summary()``."""

    def __init__(self, engine_url: str, interval_s: float = 0.5) -> None:
        self.engine_url = engine_url
        self.interval_s = interval_s

    def window(self) -> _Window:
        return _Window(self.engine_url, self.interval_s)


class _Window:
    def __init__(self, engine_url: str, interval_s: float) -> None:
        self.engine_url = engine_url
        self.interval_s = interval_s
        self.samples: list[dict[str, float]] = []
        self.start: dict[str, float] | None = None
        self.end: dict[str, float] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Window:
        self.start = read_metrics(self.engine_url)
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.end = read_metrics(self.engine_url)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            m = read_metrics(self.engine_url)
            if m is not None:
                self.samples.append({g: m.get(g, 0.0) for g in GAUGES})

    def summary(self) -> dict[str, Any]:
        running = [s[GAUGES[0]] for s in self.samples]
        out: dict[str, Any] = {
            "engine_samples": len(running),
            "engine_busy_share": round(sum(r > 0 for r in running) / len(running), 3) if running else None,
            "engine_running_mean": round(sum(running) / len(running), 2) if running else None,
            "engine_waiting_max": max((s[GAUGES[1]] for s in self.samples), default=None),
        }
        for counter, key in zip(COUNTERS, ("engine_generation_tokens", "engine_prompt_tokens")):
            a, b = (self.start or {}).get(counter), (self.end or {}).get(counter)
            out[key] = int(b - a) if a is not None and b is not None else None
        return out

"""Push a trainer's weights into vLLM servers that serve from a directory the trainer can write.

One sequence, shared by every plug-in and example (docs/rl-on-cpu.md "Versions and weight sync"):

1. ``POST /pause?mode=keep`` on every engine: requests in flight freeze and finish under the new
   weights after the resume (their captures then span the update);
2. write the weights over the engine's own safetensors file(s), under the file's own keys;
3. ``POST /collective_rpc {"method": "reload_weights"}``: the engine reloads them from disk;
4. set the version: ``POST /update_weight_version`` and check ``GET /weight_info`` (the proxy reads
   it around every call), and, given a control client and an integer version, also through
   Polar's control API (``ControlClient.set_policy_version``): every proxy reads that one from its
   store, so a capture whose ``/weight_info`` read failed under load still names the step
   (docs/engines.md "Versions under load"); an engine with no ``/weight_info`` gets it through the
   control API alone;
5. ``POST /resume``, always, so a failed push never leaves an engine paused.

The RL endpoints exist when vLLM runs with ``VLLM_SERVER_DEV_MODE=1`` (``scripts/engine.sh``).
Models with tied embeddings are refused: vLLM 0.32 (CPU, measured) fails to reload a tied LM head
and keeps serving the stale one, silently.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

VersionSource = Literal["auto", "engine", "control"]
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


class WeightSyncError(RuntimeError):
    """A push that could not be done, or an engine that did not take it (``status``: the HTTP
    status an engine answered with, when it answered)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SetsPolicyVersion(Protocol):
    """What the sync needs of a control client: ``ControlClient.set_policy_version``."""

    def set_policy_version(self, version: int) -> Any: ...


@dataclass(frozen=True)
class SyncReport:
    version: str
    seconds: float
    # What each engine reports after the push (None: the version went through the control API).
    reported: dict[str, str | None]


def engine_files(model_dir: Path) -> dict[str, list[str]]:
    """The engine's safetensors files under ``model_dir`` and the tensor keys each holds."""
    index = model_dir / INDEX
    if index.exists():
        weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
        files: dict[str, list[str]] = {}
        for key, name in weight_map.items():
            files.setdefault(name, []).append(key)
        return {name: sorted(keys) for name, keys in files.items()}
    single = model_dir / SINGLE
    if not single.exists():
        raise WeightSyncError(f"{model_dir} holds neither {SINGLE} nor {INDEX}: give the directory the engine serves")
    from safetensors import safe_open

    with safe_open(str(single), "pt") as f:
        return {SINGLE: sorted(f.keys())}


class VllmWeightSync:
    """``VllmWeightSync(["http://127.0.0.1:8000"], model_dir)``, then ``push(model, version)``
    after every optimizer step.

    ``model_dir`` is the directory the engines were started with (``--model``): the push writes its
    safetensors file(s) in place, so trainer and engines must share that file system.
    ``version_source``: ``engine`` sets it on the engines (``/update_weight_version``), ``control``
    through ``control.set_policy_version`` (for engines without ``/weight_info``), ``auto`` asks
    each engine's ``GET /weight_info`` once and picks.
    """

    def __init__(
        self,
        engine_urls: str | Sequence[str],
        model_dir: str | Path,
        *,
        control: SetsPolicyVersion | None = None,
        version_source: VersionSource = "auto",
        allow_tied_embeddings: bool = False,
        timeout_s: float = 120.0,
    ) -> None:
        urls = [engine_urls] if isinstance(engine_urls, str) else list(engine_urls)
        if not urls:
            raise ValueError("VllmWeightSync: no engine URL given")
        self.engine_urls = [u.rstrip("/") for u in urls]
        self.model_dir = Path(model_dir)
        self.timeout_s = timeout_s
        self.control = control
        config_file = self.model_dir / "config.json"
        if config_file.exists() and not allow_tied_embeddings:
            config = json.loads(config_file.read_text())
            text = config.get("text_config") or config
            if text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)):
                raise WeightSyncError(
                    f"{config_file}: tie_word_embeddings is true; vLLM 0.32 keeps a stale LM head after "
                    "reload_weights for tied embeddings (measured on CPU). Untie them (save the model with "
                    "tie_word_embeddings=False), or pass allow_tied_embeddings=True for an engine known to reload them"
                )
        self.files = engine_files(self.model_dir)
        if version_source == "auto":
            version_source = "engine" if all(self._reports_version(u) for u in self.engine_urls) else "control"
        if version_source == "control" and (control is None or not hasattr(control, "set_policy_version")):
            raise WeightSyncError(
                "the engine reports no weight version (GET /weight_info): pass control=ControlClient(...) "
                "(a polar_rollouts with ControlClient.set_policy_version) so the version reaches Polar "
                "through its control API"
            )
        self.version_source: VersionSource = version_source

    def push(self, weights: Any, version: int | str) -> SyncReport:
        """Write ``weights`` (a torch module or its state dict) into the engines and set ``version``."""
        from safetensors.torch import save_file

        state: Mapping[str, Any] = weights.state_dict() if hasattr(weights, "state_dict") else weights
        missing = sorted({k for keys in self.files.values() for k in keys} - set(state))
        if missing:
            raise WeightSyncError(
                f"the trainer's weights lack {len(missing)} tensor(s) the engine loads (e.g. {missing[:3]}): "
                "push the model the engine serves, with its key names"
            )
        tag = str(version)
        t0 = time.monotonic()
        paused: list[str] = []
        try:
            for url in self.engine_urls:
                self._http("POST", f"{url}/pause?mode=keep")
                paused.append(url)
            for name, keys in self.files.items():
                tensors = {k: state[k].detach().to("cpu").contiguous() for k in keys}
                save_file(tensors, str(self.model_dir / name), metadata={"format": "pt"})
            for url in self.engine_urls:
                self._http("POST", f"{url}/collective_rpc", {"method": "reload_weights"})
            reported: dict[str, str | None] = {}
            if self.version_source == "engine":
                for url in self.engine_urls:
                    self._http("POST", f"{url}/update_weight_version", {"new_version": tag})
                    now = self._http("GET", f"{url}/weight_info")["weight_version"]
                    if str(now) != tag:
                        raise WeightSyncError(f"{url} reports weight version {now!r} after the push of {tag!r}")
                    reported[url] = str(now)
                self._also_to_control(version)
            else:
                self._set_control_version(version)
                reported = {url: None for url in self.engine_urls}
        finally:
            for url in paused:
                self._http("POST", f"{url}/resume")
        return SyncReport(version=tag, seconds=time.monotonic() - t0, reported=reported)

    def set_version(self, version: int | str) -> None:
        """Name the weights the engines serve now without pushing any (e.g. version 0 at start)."""
        tag = str(version)
        if self.version_source == "engine":
            for url in self.engine_urls:
                self._http("POST", f"{url}/update_weight_version", {"new_version": tag})
            self._also_to_control(version)
        else:
            self._set_control_version(version)

    def _also_to_control(self, version: int | str) -> None:
        # Before the resume: a call the pause froze ends under the new version on either source.
        # A label that is not a step number has no order the control API could keep: engine only.
        if self.control is not None and not isinstance(version, bool) and str(version).isdigit():
            self.control.set_policy_version(int(version))

    def _set_control_version(self, version: int | str) -> None:
        # Polar's control API orders versions: they are the trainer's step counter.
        if isinstance(version, bool) or not str(version).isdigit():
            raise WeightSyncError(f"version {version!r}: through the control API a version is the training step (an int >= 0)")
        assert self.control is not None  # checked in __init__
        self.control.set_policy_version(int(version))

    def _reports_version(self, url: str) -> bool:
        try:
            doc = self._http("GET", f"{url}/weight_info")
        except WeightSyncError as err:
            if err.status == 404:
                return False
            raise
        return isinstance(doc, dict) and "weight_version" in doc

    def _http(self, method: str, url: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as err:
            hint = " (the RL endpoints need VLLM_SERVER_DEV_MODE=1)" if err.code == 404 else ""
            raise WeightSyncError(f"{method} {url}: HTTP {err.code}{hint}: {err.read()[:200]!r}", err.code) from None
        except urllib.error.URLError as err:
            raise WeightSyncError(f"{method} {url}: {err.reason}") from None
        return json.loads(raw) if raw.strip() else None

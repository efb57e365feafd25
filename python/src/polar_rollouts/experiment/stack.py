"""The processes an experiment runs beside the trainer, and the checkpoint folder they share.

- ``prepare_model_dir``: a writable copy of the model (an engine preset's, built first when
  missing, or a directory) with its LM head untied, in the folder the trainer saves into and the
  engine reloads from (vLLM 0.32 keeps a stale tied head after ``reload_weights``: docs/engines.md).
- ``engine_stack``: vLLM through ``scripts/engine.sh serve`` (float32, processed logprobs, the RL
  endpoints, no prefix cache) and ``polar serve --upstream ... --out DIR`` in front of it: vLLM is
  ready when its model list names this start (``wait_engine``: another server may take a picked
  port first), polar serve when its health route answers on the port it bound and printed.

Nothing outlives the experiment: each child is the leader of its own process group (everything it
starts stays in that group), gets ``PR_SET_PDEATHSIG`` (SIGTERM when its parent dies, however it
dies), and a watchdog process (``polar_rollouts.experiment.watchdog``) kills the groups once the
experiment's process is gone, even by SIGKILL. A normal exit, Ctrl-C or SIGTERM stops them in order.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

PR_SET_PDEATHSIG = 1
T = TypeVar("T")


class StackError(RuntimeError):
    """A process of the stack did not come up; the message holds the tail of its log."""


class PortTaken(StackError):
    """The engine could not bind its port: another process holds it."""


# New ports tried when another process takes the picked one before vLLM binds it.
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class Stack:
    engine_url: str
    proxy_url: str
    token: str
    model_dir: Path
    store: Path
    engine_log: Path
    serve_log: Path


def polar_root(*hints: Path) -> Path:
    """The Polar checkout (``bin/polar.js``, ``scripts/engine.sh``): ``$POLAR_ROOT``, else the first
    ancestor of a hint (the experiment file, the working directory, this package) that holds both."""
    env = os.environ.get("POLAR_ROOT")
    candidates = [Path(env)] if env else []
    for hint in (*hints, Path.cwd(), Path(__file__)):
        candidates += [hint.resolve(), *hint.resolve().parents]
    for c in candidates:
        if (c / "bin" / "polar.js").is_file() and (c / "scripts" / "engine.sh").is_file():
            return c
    raise StackError("cannot find the Polar checkout (bin/polar.js, scripts/engine.sh): run from it or set $POLAR_ROOT")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """preexec_fn of every child: its own process group, and SIGTERM when the parent dies."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watchdog still covers it
        pass


def spawn(argv: Sequence[str], log: Path, *, cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A child in its own process group that dies with this process (see the module doc)."""
    with log.open("wb") as out:
        return subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                preexec_fn=_die_with_parent)  # fmt: skip


class Watchdog:
    """A process that kills the process groups it is told about (SIGTERM, then SIGKILL) once this
    process is gone: it reads them from a pipe whose only writer is this process, so the pipe's
    end-of-file is this process's death, however it died. ``release()`` on a normal stop."""

    def __init__(self, grace_s: float = 20.0) -> None:
        # This very package, wherever it was imported from (an install or a source tree on sys.path).
        here = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.proc = subprocess.Popen([sys.executable, "-m", "polar_rollouts.experiment.watchdog", str(grace_s)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip

    def guard(self, pgid: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{pgid}\n".encode())
        self.proc.stdin.flush()

    def release(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"release\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait()


def _until(proc: subprocess.Popen[bytes], log: Path, timeout_s: float, probe: Callable[[], T | None], waited: str,
           every_s: float = 0.5) -> T:  # fmt: skip
    """Asks ``probe`` until it gives a value; ``proc`` exiting first (``PortTaken`` when its port was
    held), or ``timeout_s`` passing, is a StackError with the tail of ``log``. ``probe`` may raise
    a StackError of its own."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            text = log.read_text()
            if "Address already in use" in text:
                raise PortTaken(f"{proc.args!r}: its port is held by another process; {log}:\n{text[-3000:]}")
            raise StackError(f"{proc.args!r} exited ({proc.returncode}); {log}:\n{text[-3000:]}")
        found = probe()
        if found is not None:
            return found
        time.sleep(every_s)
    raise StackError(f"{waited} after {timeout_s:.0f}s; {log}:\n{log.read_text()[-3000:]}")


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    def healthy() -> bool | None:
        try:
            with urllib.request.urlopen(url, timeout=2) as res:
                return True if res.status == 200 else None
        except OSError:
            return None

    _until(proc, log, timeout_s, healthy, f"no answer from {url}")


def printed_url(proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> str:
    """The URL ``polar serve --port 0`` prints once it listens."""

    def printed() -> str | None:
        found = re.search(r"control API and proxy on (http://[^;\s]+)", log.read_text())
        return found.group(1) if found else None

    return _until(proc, log, timeout_s, printed, "polar serve printed no address", every_s=0.2)


def wait_engine(url: str, instance: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    """Waits until the engine at ``url`` answers as itself: its GET /v1/models lists ``instance``
    (``engine.sh serve --instance``). /health is not enough: a port is free when picked, but vLLM
    binds it only after its imports (10 s or more on a busy machine), and another server that took
    it in between answers /health too; the trainer would then sync weights into a stranger."""

    def lists_instance() -> bool | None:
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as res:
                return True if instance in {m.get("id") for m in json.load(res).get("data", [])} else None
        except urllib.error.HTTPError as err:
            # vLLM binds its port before it says it serves: from then on a refusal is this engine's own.
            if err.code in (401, 403) and "Starting vLLM server on" in log.read_text():
                raise StackError(f"{url}/v1/models answered {err.code}: the stack's engine takes no --api-key "
                                 "(polar serve sends none to it)") from None  # fmt: skip
            return None
        except (OSError, ValueError, AttributeError):
            return None  # not listening yet, or not an OpenAI model list: not this engine

    _until(proc, log, timeout_s, lists_instance, f"no answer from the engine at {url}")


def stop(proc: subprocess.Popen[bytes] | None, sig: int, timeout_s: float = 20) -> None:
    """Stops ``proc``'s whole process group: ``sig``, then SIGKILL after ``timeout_s``."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=timeout_s)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        pass
    try:  # children of the group that ignored the signal or outlived its leader
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def preset_model_source(root: Path, preset: str) -> Path:
    """An engine preset's model directory (scripts/engine/presets/<preset>.sh), built when missing."""
    engine = ["bash", str(root / "scripts" / "engine.sh")]
    done = subprocess.run([*engine, "model-dir", "--preset", preset], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise StackError(f"engine preset {preset!r}: {done.stderr.strip()}")
    source = Path(done.stdout.strip())
    if not any(source.glob("*.safetensors")):
        subprocess.run([*engine, "setup", "--preset", preset], check=True, cwd=root)
    return source


def prepare_model_dir(source: Path, dest: Path, *, log: Callable[[str], None] = print) -> Path:
    """``dest``: a fresh, writable copy of the model at ``source`` with an untied LM head (a copy
    of the embedding as ``lm_head.weight``, ``tie_word_embeddings: false``: the same logits).
    This folder is where the trainer writes each step's weights and what the engine serves."""
    if dest.resolve() == source.resolve():
        raise StackError(f"the checkpoint folder {dest} is the model's own folder: each step overwrites it; give another")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest)
    for p in dest.rglob("*"):  # copies of a read-only store (a wheel, a cache) stay read-only
        p.chmod(p.stat().st_mode | 0o200)
    config_file = dest / "config.json"
    config = json.loads(config_file.read_text())
    text = config.get("text_config", config)
    tied = text.get("tie_word_embeddings", config.get("tie_word_embeddings", True))
    if tied:
        _untie(dest, config_file, config, text)
        log(f"experiment: {dest}: LM head untied (a copy of the embedding): vLLM reloads a tied head stale")
    return dest


def _untie(dest: Path, config_file: Path, config: dict[str, Any], text: dict[str, Any]) -> None:
    from safetensors.torch import load_file, save_file

    single = dest / "model.safetensors"
    if not single.exists():
        raise StackError(f"{dest}: untying a sharded checkpoint is not done here; give an untied model (docs/experiments.md)")
    state = load_file(str(single))
    if "lm_head.weight" not in state:
        embed = next((k for k in state if k.endswith("embed_tokens.weight")), None)
        if embed is None:
            raise StackError(f"{dest}: tied model with no embed_tokens.weight to copy into lm_head.weight")
        state["lm_head.weight"] = state[embed].clone()
    save_file(state, str(single), metadata={"format": "pt"})
    text["tie_word_embeddings"] = False
    config["tie_word_embeddings"] = False
    config_file.write_text(json.dumps(config, indent=2) + "\n")


@contextmanager
def engine_only(
    out: Path,
    model_dir: Path,
    *,
    root: Path,
    seed: int = 0,
    preset: str = "qwen3",
    engine_port: int = 0,
    engine_timeout_s: float = 300,
    engine_args: Sequence[str] = ("--no-enable-prefix-caching",),
    watchdog: Watchdog | None = None,
) -> Iterator[str]:
    """vLLM serving ``model_dir`` (log ``out/engine.log``), alone: yields its URL. For a trainer
    whose proxies already run (a fleet) it is the whole stack; ``engine_stack`` puts `polar serve`
    in front of it, guarded by the same ``watchdog`` (one of its own when none is given)."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "engine.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    engine: subprocess.Popen[bytes] | None = None
    own = watchdog is None
    guard = watchdog or Watchdog()
    try:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            port = engine_port or free_port()
            url = f"http://127.0.0.1:{port}"
            instance = f"polar-engine-{secrets.token_hex(8)}"
            # Prefix caching off (the default extra args): no KV block computed by older weights
            # serves a request after a sync.
            engine = spawn(["bash", str(root / "scripts" / "engine.sh"), "serve", "--port", str(port),
                            "--instance", instance, "--model-dir", str(model_dir), "--preset", preset,
                            "--", *engine_args, "--seed", str(seed)],
                           log, cwd=root, env=env)  # fmt: skip
            guard.guard(engine.pid)
            try:
                wait_engine(url, instance, engine, log, engine_timeout_s)
                break
            except PortTaken:
                if engine_port or attempt == PORT_ATTEMPTS:  # the caller's own port is not swapped for another
                    raise
                stop(engine, signal.SIGTERM)
                print(f"experiment: {url} was taken before vLLM bound it; starting it on another port", file=sys.stderr)
        yield url
    finally:
        stop(engine, signal.SIGTERM)
        if own:
            guard.release()


@contextmanager
def engine_stack(
    out: Path,
    model_dir: Path,
    *,
    root: Path,
    seed: int = 0,
    run: int = 4,
    preset: str = "qwen3",
    engine_port: int = 0,
    proxy_port: int = 0,
    engine_timeout_s: float = 300,
    engine_args: Sequence[str] = ("--no-enable-prefix-caching",),
    log: IO[str] | None = None,
) -> Iterator[Stack]:
    """vLLM serving ``model_dir`` (``engine_only``) and `polar serve` (store ``out/store``) in front of it."""
    out.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    serve_log = out / "serve.log"
    env = {**os.environ, "POLAR_CONTROL_TOKEN": "", "HF_HUB_OFFLINE": "1"}
    node = shutil.which("node")
    if node is None:
        raise StackError("node (>= 22.18) must be on PATH for polar serve")
    serve: subprocess.Popen[bytes] | None = None
    watchdog = Watchdog()
    try:
        # The engine is stopped after polar serve: leaving this block stops the inner one first.
        with engine_only(out, model_dir, root=root, seed=seed, preset=preset, engine_port=engine_port,
                         engine_timeout_s=engine_timeout_s, engine_args=engine_args,
                         watchdog=watchdog) as engine_url:  # fmt: skip
            try:
                # --out: the store, logs and sessions go under the experiment's folder, never the checkout.
                # scripts/engine.sh starts vLLM with processed logprobs (after temperature, top-k, top-p);
                # captures must say so, or a run sampling at any temperature but 1 is refused as raw.
                serve = spawn([node, str(root / "bin" / "polar.js"), "serve", "--upstream", engine_url,
                               "--port", str(proxy_port), "--logprobs-mode", "processed_logprobs", "--out", str(out),
                               "--control-token", token, "--run", str(run)],
                              serve_log, cwd=root, env=env)  # fmt: skip
                watchdog.guard(serve.pid)
                # Port 0 unless given: polar serve binds a free port itself and prints it, so no process
                # can take it between a pick and the bind (as wait_engine guards against for vLLM).
                proxy_url = f"http://127.0.0.1:{proxy_port}" if proxy_port else printed_url(serve, serve_log, 60)
                wait_healthy(f"{proxy_url}/healthz", serve, serve_log, 60)
                yield Stack(engine_url, proxy_url, token, model_dir, out / "store", out / "engine.log", serve_log)
            finally:
                # polar serve first (SIGINT: it cancels its sessions and stops its runner), then the engine.
                stop(serve, signal.SIGINT)
    finally:
        watchdog.release()

"""python -m polar_rollouts.experiment CONFIG.toml [--out DIR] [--seed N] [--resume] [--check]

Runs one experiment from its file (docs/experiments.md): prepares the shared checkpoint folder
(fine-tuned first on `[warmup]` demonstrations, when the file has them),
starts the engine and `polar serve`, trains, evaluates the held-out tasks, and writes
OUT/curve.jsonl, OUT/curve.png and OUT/summary.json. Exits 1 when a faithfulness check failed,
2 on a bad file. Also installed as `polar-train`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from .capture_versions import capture_versions
from .config import ConfigError, Experiment, load
from .report import plot, read_curve, summary
from .stack import StackError, engine_stack, polar_root, prepare_model_dir, preset_model_source


def log(line: str) -> None:
    print(line, flush=True)


def last_checkpoint(out: Path) -> Path | None:
    found = sorted((out / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    return found[-1] if found else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="polar-train", description=__doc__.split("\n\n")[1] if __doc__ else None)
    ap.add_argument("config", type=Path, help="the experiment file (TOML)")
    ap.add_argument("--out", type=Path, help="output folder (overrides the file's `out`)")
    ap.add_argument("--seed", type=int, help="overrides the file's `seed`")
    ap.add_argument("--resume", action="store_true", help="continue from the last saved step in OUT/checkpoints")
    ap.add_argument("--check", action="store_true", help="validate the file (and [trainer.args]) and exit")
    a = ap.parse_args(argv)
    try:
        exp = load(a.config, out=a.out, seed=a.seed)
        if a.check:
            check_only(exp)
            log(f"experiment: {a.config} is valid")
            return 0
    except ConfigError as err:
        print(f"polar-train: {err}", file=sys.stderr)
        return 2
    # SIGTERM takes the same way out as Ctrl-C: the stack's context stops the engine and polar serve.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run(exp, a.resume)
    except StackError as err:
        print(f"polar-train: {err}", file=sys.stderr)
        return 1
    except ConfigError as err:
        print(f"polar-train: {err}", file=sys.stderr)
        return 2


def check_only(exp: Experiment) -> None:
    from .trl_run import grpo_config

    grpo_config(exp)


def run(exp: Experiment, resume: bool) -> int:
    t_start = time.monotonic()
    check_only(exp)  # [trainer.args] refused before the engine starts, not after
    out = exp.out
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = last_checkpoint(out) if resume else None
    if resume and checkpoint is None:
        log(f"experiment: nothing to resume in {out / 'checkpoints'}; starting at step 0")
    if checkpoint is None:
        for stale in ("store", "checkpoints", "curve.jsonl", "curve.png", "summary.json", "warmup", "warmup.json"):
            target = out / stale
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        rows_kept: list[dict[str, Any]] = []
    else:
        step = int(checkpoint.name.rsplit("-", 1)[1])
        rows_kept = [r for r in read_curve(out / "curve.jsonl") if r["step"] <= step]
        log(f"experiment: resuming from {checkpoint} (step {step})")
    (out / "experiment.toml").write_text(exp.source.read_text())
    root = polar_root(exp.source)
    source = exp.model.path or preset_model_source(root, exp.model.preset or "")
    # The shared checkpoint folder. A resumed run starts the engine on the original weights: the
    # trainer loads the checkpoint's, and pushes them (version = the checkpoint's step) before any
    # rollout.
    model_dir = prepare_model_dir(source, exp.model.checkpoint_dir or out / "model", log=log)
    if exp.warmup is not None and checkpoint is None:
        from .warmup import warm_up

        record = warm_up(str(exp.source), exp.warmup, model_dir, out, exp.seed, log)
        (out / "warmup.json").write_text(json.dumps(record, indent=2) + "\n")
    elif exp.warmup is not None:
        log("experiment: no warm-up on resume: the checkpoint's weights already hold it")
    with (out / "curve.jsonl").open("w") as curve:
        for r in rows_kept:
            curve.write(json.dumps(r) + "\n")
        curve.flush()
        with engine_stack(out, model_dir, root=root, seed=exp.seed, run=exp.serve.run, preset=exp.model.preset or "qwen3",
                          engine_port=exp.engine.port, proxy_port=exp.serve.port,
                          engine_timeout_s=exp.engine.startup_timeout_s,
                          engine_args=exp.engine.extra_args or ("--no-enable-prefix-caching",)) as stack:  # fmt: skip
            log(f"experiment: engine {stack.engine_url}, polar serve {stack.proxy_url}, store {stack.store}, "
                f"checkpoint folder {model_dir} (ready in {time.monotonic() - t_start:.0f}s)")  # fmt: skip
            from .trl_run import run_trl

            evaluated = {r["step"] for r in rows_kept if r["kind"] == "eval"}
            extra = run_trl(exp, stack, curve, log, checkpoint, evaluated, started=t_start)
    extra["capture_versions"], wrong = capture_versions(out / "store")
    extra["problems"] = extra.get("problems", []) + wrong
    if (out / "warmup.json").exists():
        extra["warmup"] = json.loads((out / "warmup.json").read_text())
    rows = read_curve(out / "curve.jsonl")
    s = summary(exp.name, exp.seed, rows, time.monotonic() - t_start, extra)
    (out / "summary.json").write_text(json.dumps(s, indent=2) + "\n")
    drew = plot(rows, f"{exp.name} (seed {exp.seed})", out / "curve.png")
    if not drew:
        log("experiment: no curve.png: matplotlib is not installed (pip install 'polar-rollouts[experiment]')")
    log(f"experiment: held-out success {s['heldout_before']} -> {s['heldout_after']} in {s['steps']} steps, "
        f"{s['wall_s']}s; {out / 'curve.jsonl'}, {out / 'summary.json'}" + (f", {out / 'curve.png'}" if drew else ""))  # fmt: skip
    for w in s["warnings"]:
        print(f"polar-train: WARNING: {w}", file=sys.stderr)
    if s["problems"]:
        print("polar-train: FAILED checks:\n  " + "\n  ".join(s["problems"][:10]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

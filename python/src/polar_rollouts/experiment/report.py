"""summary.json and curve.png from curve.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _median(values: list[Any]) -> float | None:
    vals = sorted(v for v in values if v is not None)
    return round(vals[len(vals) // 2], 3) if vals else None


def read_curve(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _outcome(row: dict[str, Any]) -> Any:
    """A train row's outcome reward (the sessions' own): "reward" is TRL's logged sum with the
    weighted process reward, which goes above 1. Rows from before `reward_mean` have only that."""
    return row.get("reward_mean", row["reward"])


def summary(name: str, seed: int, rows: list[dict[str, Any]], wall_s: float, extra: dict[str, Any]) -> dict[str, Any]:
    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    first, last = (evals[0], evals[-1]) if evals else ({}, {})
    return {
        "name": name,
        "seed": seed,
        "steps": train[-1]["step"] if train else 0,
        "wall_s": round(wall_s),
        "heldout_before": first.get("heldout_success"),
        "heldout_after": last.get("heldout_success"),
        "heldout_gain_points": round(100 * (last["heldout_success"] - first["heldout_success"]), 1) if evals else None,
        "tool_calls_per_session_before": first.get("tool_calls_per_session"),
        "tool_calls_per_session_after": last.get("tool_calls_per_session"),
        "model_calls_per_session_before": first.get("model_calls_per_session"),
        "model_calls_per_session_after": last.get("model_calls_per_session"),
        "train_reward_first": _outcome(train[0]) if train else None,
        "train_reward_last": _outcome(train[-1]) if train else None,
        "logp_diff_max": max((r["logp_diff_max"] or 0.0 for r in train), default=None),
        "rollout_s_median": _median([r.get("rollout_s") for r in train]),
        "trainer_s_median": _median([r.get("trainer_s") for r in train]),
        "weight_sync_s_median": _median(extra.get("weight_sync_s", [])),
        "engine_busy_share_median": _median([r.get("engine_busy_share") for r in train]),
        "no_signal_steps": sum(bool(r.get("no_signal")) for r in train),
        # [warmup]'s fine-tuning before step 0 (warmup.py); held-out "before" is after it
        "warmup": extra.get("warmup"),
        # captures by who named their version (engine, trainer, unknown): capture_versions.py
        "capture_versions": extra.get("capture_versions", {}),
        "warnings": extra.get("warnings", []),
        "problems": extra.get("problems", [])[:20],
    }


def plot(rows: list[dict[str, Any]], title: str, path: Path) -> bool:
    """curve.png (matplotlib, the `experiment` extra); False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if train:
        # A step where every session failed has none.
        outcome = [_outcome(r) for r in train]
        ax.plot([r["step"] for r in train], [float("nan") if v is None else v for v in outcome], "o-", color="tab:blue", ms=3,
                label="train outcome reward (mean over the step's sessions)")  # fmt: skip
    if evals:
        ax.plot([r["step"] for r in evals], [r["heldout_success"] for r in evals], "s-", color="tab:orange",
                label="held-out success (share of sessions fully right)")  # fmt: skip
    # Tool calls on their own axis: scaled onto the reward's, they were clipped at 1 (2 calls) and
    # hid the change.
    calls = [(r["step"], r["tool_calls_per_session"]) for r in evals if r.get("tool_calls_per_session") is not None]
    handles, labels = ax.get_legend_handles_labels()
    if calls:
        ax2 = ax.twinx()
        line = ax2.plot([s for s, _ in calls], [c for _, c in calls], "^:", color="tab:green", ms=4,
                        label="held-out tool calls per session (right axis)")  # fmt: skip
        ax2.set_ylabel("tool calls per held-out session")
        ax2.set_ylim(0, max(4.0, max(c for _, c in calls) * 1.1))
        handles, labels = [*handles, *line], [*labels, str(line[0].get_label())]
    ax.set_title(title)
    ax.set_xlabel("optimizer step (= policy version)")
    ax.set_ylabel("reward / success")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    if handles:
        ax.legend(handles, labels, loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True

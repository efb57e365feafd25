"""Who named each capture's policy version, read from the run's store (``OUT/store/captures``).

The curve's version checks read the traces, which carry a version but not who named it. A version
is only evidence of which weights sampled a call when the engine that sampled it reported it
(``policy_version_source: "engine"``), or, when the engine's ``/weight_info`` read missed, the
trainer's step with the reason in ``policy_version_note`` (docs/engines.md "Versions under
load"). A version the proxy named (its configured or admin-set one, a caller's header) says
nothing about the engine's weights, so it is a failed check, as is the trainer's with no reason.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def capture_versions(store: Path) -> tuple[dict[str, int], list[str]]:
    """(captures counted by who named their version, ``"unknown"`` for none; problems)."""
    counts: dict[str, int] = {}
    problems: list[str] = []
    for path in sorted((store / "captures").rglob("*.json.gz")):
        try:
            c: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
        except (OSError, ValueError) as err:
            problems.append(f"capture {path.relative_to(store)}: unreadable ({err})")
            continue
        source = c.get("policy_version_source") if c.get("policy_version") is not None else None
        counts[source or "unknown"] = counts.get(source or "unknown", 0) + 1
        if source is None or source == "engine" or (source == "trainer" and c.get("policy_version_note")):
            continue
        why = "with no note saying why the engine's read missed" if source == "trainer" else "not by the engine"
        problems.append(f"capture {path.relative_to(store)}: version {c['policy_version']} named by {source}, {why}")
    return counts, problems

#!/usr/bin/env python3
"""The trainer's side of rollout-as-a-service, over the task control API (docs/control-api.md).

Submits a task (a line of examples/tasks.jsonl), prints each session's result as it finishes,
reads the group's shard, keeps the traces a trainer should use, computes GRPO advantages, and
prints what would go to the optimizer: per trace the token counts, the trainable tokens, the
advantage and the behaviour logprobs' mean over the trainable tokens.

    npx polar serve        # prints --proxy URL --control-token TOKEN
    python examples/trainer_loop.py --proxy http://127.0.0.1:8787 --control-token TOKEN \\
        --task-id hello-file --as hello-run-1
    python examples/trainer_loop.py --proxy http://127.0.0.1:8787 --control-token TOKEN \\
        --tasks examples/grpo-tasks.jsonl --task-id first-primes --as primes-run-1

The second group's samples follow different script alternatives and get rewards 1, 2/3 and 0, so
its advantages are not 0 (docs/dry-run-policy.md "Alternatives"); hello-file's samples all score 1.

Needs only `pip install ./python` (numpy, pyarrow; boto3 for --store s3://...).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from polar_rollouts import ControlClient, TraceFilter, filter_traces, grpo_advantages, open_store

ROOT = Path(__file__).resolve().parent.parent


def load_task(path: Path, task_id: str) -> dict[str, object]:
    """The line of a task file with this task_id, read by the rule `polar run` reads it with
    (batch-runner/submit.ts, docs/tasks.md): one JSON object per line, blank and `//` lines skipped.
    The control API checks every field when the task is submitted."""
    for number, line in enumerate(path.read_text().split("\n"), start=1):
        if line.strip() == "" or line.lstrip().startswith("//"):
            continue
        try:
            task = json.loads(line)
        except json.JSONDecodeError as err:
            raise SystemExit(f"{path}:{number}: not valid JSON: {err} (a task file holds one task per line)") from None
        if isinstance(task, dict) and task.get("task_id") == task_id:
            return dict(task)
    raise SystemExit(f"no task {task_id!r} in {path}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxy", required=True, help="the proxy with the control API, http://HOST:PORT")
    parser.add_argument(
        "--control-token", "--admin-token", dest="token", required=True, help="the control API's bearer token"
    )
    parser.add_argument("--tasks", type=Path, default=ROOT / "examples" / "tasks.jsonl")
    parser.add_argument("--task-id", default="hello-file", help="which line of --tasks to submit")
    parser.add_argument("--as", dest="as_id", help="submit under this task id (a fresh group)")
    parser.add_argument("--store", help="read results and shards here when the API gives no URLs (dir or s3://)")
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("--include-orphans", action="store_true")
    args = parser.parse_args(argv)

    task = load_task(args.tasks, args.task_id)
    if args.as_id:
        task["task_id"] = args.as_id
    client = ControlClient(
        args.proxy, args.token, store=open_store(args.store) if args.store else None
    )
    submitted = client.submit(task)
    print(f"submitted {submitted['task_id']}: {submitted['enqueued']} sessions enqueued, {submitted['skipped']} already done")

    for result in client.stream_results(submitted["task_id"], timeout_s=args.timeout_s, poll_s=0.5):
        print(f"session {result.session_id}: {result.status} reward={result.reward} traces={len(result.traces)}")

    traces = client.shard(submitted["task_id"])
    kept = filter_traces(traces, TraceFilter(include_orphans=args.include_orphans))
    print(f"shard: {len(traces)} traces, {len(kept)} kept (COMPLETED, rewarded{', orphans too' if args.include_orphans else ', no orphans'})")
    if not kept:
        print("nothing to train on")
        return 1
    advantages = grpo_advantages(kept)
    total_trainable = 0
    for trace, advantage in zip(kept, advantages):
        mask = trace.loss_mask.astype(bool)
        lp = trace.response_logprobs
        behaviour = f"{float(lp[mask].mean()):.4f}" if lp is not None and mask.any() else "none"
        total_trainable += int(mask.sum())
        print(
            f"optimizer input: session={trace.session_id} trace={trace.trace_index} "
            f"input_ids={len(trace.input_ids)} prompt={len(trace.prompt_ids)} response={len(trace.response_ids)} "
            f"trainable={int(mask.sum())} reward={trace.reward} advantage={advantage:+.4f} "
            f"mean_behaviour_logprob={behaviour}"
        )
    spread = float(np.ptp([t.reward for t in kept if t.reward is not None]))
    print(f"batch: {len(kept)} sequences, {total_trainable} trainable tokens, reward spread {spread:g}")
    if spread == 0:
        print("every sample of the group scored the same: GRPO advantages are 0, this group gives no gradient")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

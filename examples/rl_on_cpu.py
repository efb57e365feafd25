#!/usr/bin/env python3
"""RL on one CPU machine, through the whole system (README "RL on one CPU machine").

    .venv/bin/python examples/rl_on_cpu.py --out DIR --iterations N --seed S

Starts a real vLLM (scripts/engine.sh, float32, a copy of the tiny untied Qwen3 in DIR/model) and
`polar serve --upstream` in front of it (proxy, control API, runner, store DIR/store). Each
iteration submits task groups through the control API with polar_rollouts' ControlClient; every
session runs examples/agents/two-turn-agent.mjs (two model calls through the proxy, token-in-
token-out, so one spliced trace per session), scored by the test_on_output evaluator running
examples/rl/lowercase-score.mjs. The trainer reads the group shards with polar_rollouts, checks
them (versions, masks, logprobs), takes a GRPO step in PyTorch (transformers Qwen3ForCausalLM,
float32) and pushes the weights to the engine with polar_rollouts.weight_sync (pause, save,
reload_weights, update_weight_version, resume; the proxy reads the engine's /weight_info around
every call). `--mode one-step-off` samples iteration i+1
while the step on iteration i runs (one step stale, bounded by --max-staleness).

On a fleet (docs/rl-on-cpu.md "On a fleet"): `--proxy URL --control-token TOKEN` (or
$POLAR_CONTROL_TOKEN) starts the engine alone and no `polar serve`; the engine is registered through
that proxy's control API (replace_replicas), each version is named there, and the task groups and
shards go through it; sessions run on the fleet's runners, whose harnesses call whichever proxy
they were given. `--store` (s3://bucket/prefix with the AWS_* variables, or a directory) is the
fleet's store, read for the per-capture checks; `--also-proxy URL` names the fleet's other proxies,
checked to route to the same engine and counted at the end; `--admin-token` sets the fleet's
version back to 0 for a new run (a fleet keeps it across runs).

Writes DIR/curve.jsonl (one object per iteration), DIR/curve.png (reward against version),
DIR/store, DIR/engine.log and DIR/serve.log. Exits 1 if a faithfulness check fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import secrets
import shutil
import sys
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "rl"))

from curve_png import reward_curve_png  # noqa: E402
from local_stack import StackError, copy_tiny_model, engine_only, engine_stack, free_port  # noqa: E402

from polar_rollouts import ControlApiError, ControlClient, Trace, TraceFilter, VersionSpan, filter_traces, grpo_advantages  # noqa: E402
from polar_rollouts.store import DirectoryStore, Store, open_store  # noqa: E402
from polar_rollouts.weight_sync import VllmWeightSync, WeightSyncError  # noqa: E402

PROMPTS = [
    "Write a few words in lowercase letters only.",
    "Describe the sea using lowercase letters only.",
    "Name some animals, in lowercase letters only.",
    "Tell a very short story in lowercase letters only.",
]
FOLLOW_UP = "Say more, again in lowercase letters only."
SCORE_LINES = 100  # lowercase-score.mjs prints "ok 1".."ok K" for a score of K/100


class CheckFailed(RuntimeError):
    pass


@dataclass
class Batch:
    iteration: int
    task_ids: list[str]
    submitted_at: float


def task_for(run_id: str, iteration: int, group: int, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "task_id": f"{run_id}-it{iteration:03d}-g{group}",
        "num_samples": args.group_size,
        "timeout_seconds": 120,
        "instruction": PROMPTS[group % len(PROMPTS)],
        "agent": {
            "harness": "shell",
            "settings": {"command": "node {{polar_root}}/examples/agents/two-turn-agent.mjs {{instruction}}"},
            "env": {"AGENT_FOLLOW_UP": FOLLOW_UP},
            "sampling": {"temperature": 1.0, "max_tokens": args.max_tokens},
            "token_in_token_out": True,
        },
        "runtime": {"backend": args.runtime},
        "evaluator": {
            "strategy": "test_on_output",
            "config": {
                "command": "node lowercase-score.mjs",
                # inline: a runner reads no host files for tasks (only from --files-dir)
                "files": {"lowercase-score.mjs": (ROOT / "examples" / "rl" / "lowercase-score.mjs").read_text()},
                "expected_lines": [f"ok {i}" for i in range(1, SCORE_LINES + 1)],
                "partial_credit": True,
            },
        },
    }


def version_of(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def response_logprobs(model: Any, traces: list[Trace], selects: list[np.ndarray]) -> list[torch.Tensor]:
    """log p(token | everything before it) under `model` at the selected response positions of
    each trace. One right-padded forward: causal attention never looks at the padding after a
    sequence, so each row computes what it would alone; the LM head runs only where selected."""
    lengths = [len(t.prompt_ids) + len(t.response_ids) for t in traces]
    ids = torch.zeros((len(traces), max(lengths)), dtype=torch.int64)
    for i, t in enumerate(traces):
        ids[i, : lengths[i]] = torch.from_numpy(np.concatenate([t.prompt_ids, t.response_ids]).astype(np.int64))
    hidden = model.model(input_ids=ids).last_hidden_state
    rows, cols, sizes = [], [], []
    for i, (t, sel) in enumerate(zip(traces, selects)):
        at = np.flatnonzero(sel) + len(t.prompt_ids)  # the selected tokens' positions in the row
        rows.append(np.full(len(at), i))
        cols.append(at)
        sizes.append(len(at))
    r, c = torch.from_numpy(np.concatenate(rows)), torch.from_numpy(np.concatenate(cols))
    logits = model.lm_head(hidden[r, c - 1]).float()
    lp = torch.log_softmax(logits, dim=-1).gather(1, ids[r, c][:, None]).squeeze(1)
    return list(torch.split(lp, sizes))


def turn_spans(t: Trace) -> list[VersionSpan]:
    """Reconstruction records one version span per sampled turn; a shard from before them, one."""
    return t.version_spans or [VersionSpan(0, len(t.response_ids), t.policy_version, t.policy_version_end)]


def sampled_positions(t: Trace) -> np.ndarray:
    """The response positions inside some sampled turn: the only ones a loss may train on."""
    inside = np.zeros(len(t.response_ids), dtype=bool)
    for span in turn_spans(t):
        inside[span.start : span.end] = True
    return inside


def turns_by_version(t: Trace) -> dict[int, np.ndarray]:
    """The response positions of each turn one version sampled from start to end, by version.

    A trace that crossed a weight sync is still checked turn by turn; only a turn the sync landed
    inside has no single version to check.
    """
    out: dict[int, np.ndarray] = {}
    for span in turn_spans(t):
        v_start, v_end = version_of(span.version_start), version_of(span.version_end)
        if v_start is not None and v_start == v_end:
            where = out.setdefault(v_start, np.zeros(len(t.response_ids), dtype=bool))
            where[span.start : span.end] = True
    return out


def mask_runs(mask: np.ndarray) -> int:
    m = mask.astype(np.int8)
    return int(((m[1:] == 1) & (m[:-1] == 0)).sum() + (m[0] == 1)) if len(m) else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("--out", type=Path, required=True, help="run directory: curve.jsonl, curve.png, store/, logs")
    ap.add_argument("--iterations", type=int, default=20, help="training iterations (one weight sync each)")
    ap.add_argument("--seed", type=int, default=0, help="torch and vLLM seed")
    ap.add_argument("--mode", choices=["sync", "one-step-off"], default="one-step-off", help="one-step-off: sample i+1 while training on i")
    ap.add_argument("--groups", type=int, default=2, help="task groups per iteration (one prompt each)")
    ap.add_argument("--group-size", type=int, default=8, help="sessions per group (GRPO group)")
    ap.add_argument("--max-tokens", type=int, default=12, help="tokens per model call (two calls a session)")
    ap.add_argument("--lr", type=float, default=5e-2, help="AdamW learning rate")
    ap.add_argument("--clip", type=float, default=0.2, help="PPO clip range of the ratio against the step's own weights")
    ap.add_argument("--is-cap", type=float, default=2.0, help="truncation of the importance weight (TIS)")
    ap.add_argument("--max-staleness", type=int, default=1, help="drop samples more versions old than this")
    ap.add_argument("--logprob-tolerance", type=float, default=1e-3, help="max |trainer - captured| logprob (nats)")
    ap.add_argument("--chunk", type=int, default=8, help="traces per trainer forward pass")
    ap.add_argument("--run", type=int, default=4, help="concurrent sessions in the runner")
    ap.add_argument("--runtime", default="bwrap", help="runtime.backend of the tasks (process, bwrap, ...)")
    ap.add_argument(
        "--break",
        dest="broken",
        choices=["none", "mask-shift", "skip-reload"],
        default="none",
        help="break one thing on purpose: shift the loss mask one token right, or skip reload_weights",
    )
    ap.add_argument("--proxy", help="train through this running proxy (a fleet's) instead of starting polar serve")
    # The tokens' env defaults are read after parsing: --help prints defaults, never a secret.
    ap.add_argument("--control-token",
                    help="with --proxy: its control token (default $POLAR_CONTROL_TOKEN)")  # fmt: skip
    ap.add_argument("--admin-token",
                    help="with --proxy: the fleet's admin token (default $POLAR_ADMIN_TOKEN), to set the "
                    "fleet's version back to 0 for this run (versions only go forward, across runs)")  # fmt: skip
    ap.add_argument("--also-proxy", action="append", default=[], metavar="URL",
                    help="with --proxy: another proxy of the fleet (repeatable), checked to route to the engine")  # fmt: skip
    ap.add_argument("--store", help="with --proxy: the fleet's store (s3://bucket/prefix or a directory), "
                    "read for the per-capture checks; without it they are skipped")  # fmt: skip
    args = ap.parse_args(argv)
    args.control_token = args.control_token or os.environ.get("POLAR_CONTROL_TOKEN")
    args.admin_token = args.admin_token or os.environ.get("POLAR_ADMIN_TOKEN")
    if args.proxy and not args.control_token:
        ap.error("--proxy needs --control-token or $POLAR_CONTROL_TOKEN")
    if not args.proxy and (args.also_proxy or args.store):
        ap.error("--also-proxy and --store go with --proxy")

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("store", "model", "curve.jsonl", "curve.png"):
        target = out / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

    model_dir = copy_tiny_model(out / "model")
    from transformers import Qwen3ForCausalLM

    engine_port = free_port()
    try:
        # The shared vLLM weight sync (pause keeping requests, save, reload_weights, version,
        # resume). It refuses tied embeddings, whose LM head vLLM 0.32 fails to reload, silently.
        weight_sync = VllmWeightSync(f"http://127.0.0.1:{engine_port}", model_dir, version_source="engine")
    except WeightSyncError as err:
        raise SystemExit(f"rl_on_cpu: {err}") from None
    engine_keys = [k for keys in weight_sync.files.values() for k in keys]
    model = Qwen3ForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, attn_implementation="eager")
    model.train()
    check_model = Qwen3ForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, attn_implementation="eager")
    check_model.eval()
    missing = set(engine_keys) - set(model.state_dict())
    if missing:
        raise SystemExit(f"rl_on_cpu: trainer lacks engine weights {sorted(missing)[:3]}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0, betas=(0.9, 0.99))

    t_start = time.monotonic()
    with ExitStack() as running:
        if args.proxy:
            client = ControlClient(args.proxy, args.control_token)
            # The fleet keeps its version across runs and refuses a lower one: this run counts
            # from 0. Checked before the engine starts, so a refusal costs nothing.
            try:
                current = client.policy_version().get("version")
            except ControlApiError as err:
                raise SystemExit(f"rl_on_cpu: {args.proxy}: {err}") from None
            if current not in (None, "0", 0):
                if not args.admin_token:
                    raise SystemExit(f"rl_on_cpu: the fleet's policy version is {current}, ahead of this run's 0: give "
                                     "--admin-token (or $POLAR_ADMIN_TOKEN) to set it back for a new run")  # fmt: skip
                restart_versions(args.proxy, args.admin_token)
            try:
                engine_url = running.enter_context(engine_only(out, model_dir, seed=args.seed, engine_port=engine_port))
            except StackError as err:
                raise SystemExit(f"rl_on_cpu: {err}") from None
            # The fleet's proxies route by the replica set in the store: registered through one,
            # seen by all (docs/control-api.md "A trainer on a fleet").
            try:
                client.replace_replicas([engine_url], wait_s=60)
                seen_by = {
                    other: [r["url"] for r in ControlClient(other, args.control_token).replicas()] for other in args.also_proxy
                }
            except ControlApiError as err:  # e.g. 422: a proxy that does not allow the engine's address
                raise SystemExit(f"rl_on_cpu: registering the engine {engine_url}: {err}") from None
            for other, seen in seen_by.items():
                if seen != [engine_url]:
                    raise SystemExit(f"rl_on_cpu: {other} routes to {seen}, not the engine {engine_url} "
                                     f"registered through {args.proxy}")  # fmt: skip
            store = open_store(args.store) if args.store else None
            store_name = args.store or "not read"
            where = f"proxy {args.proxy}" + "".join(f" + {u}" for u in args.also_proxy)
        else:
            try:
                stack = running.enter_context(
                    engine_stack(out, model_dir, seed=args.seed, run=args.run, engine_port=engine_port)
                )
            except StackError as err:
                raise SystemExit(f"rl_on_cpu: {err}") from None
            engine_url = stack.engine_url
            client = ControlClient(stack.proxy_url, stack.token)
            store = DirectoryStore(stack.store)
            store_name = str(stack.store)
            where = f"polar serve {stack.proxy_url}"
        # The version also goes through the control API: a capture whose /weight_info read failed
        # under load keeps the step the trainer named (with the reason), instead of none.
        weight_sync.control = client
        weight_sync.set_version(0)
        print(f"rl_on_cpu: engine {engine_url}, {where}, store {store_name} "
              f"(ready in {time.monotonic() - t_start:.0f}s)", flush=True)  # fmt: skip
        if store is None:
            print("rl_on_cpu: no --store: the per-capture checks (version source, replica) are skipped", flush=True)
        proxies = [args.proxy, *args.also_proxy] if args.proxy else []
        before = {u: proxy_captures(u) for u in proxies}
        code = train(args, out, model, check_model, optimizer, weight_sync, client, store, engine_url, t_start)
        if proxies:
            # Which proxies the run's model calls went through (each counts its own captures; a
            # proxy restarted meanwhile counts from its restart).
            after = {u: proxy_captures(u) for u in proxies}
            took = {u: None if before[u] is None or after[u] is None else after[u] - before[u] for u in proxies}
            print(f"rl_on_cpu: model calls captured through each proxy during the run: {took}", flush=True)
        return code


def restart_versions(url: str, admin_token: str) -> None:
    """POST /admin/policy-version 0: a new run's version on every proxy of the fleet (no order check)."""
    request = urllib.request.Request(f"{url}/admin/policy-version", data=json.dumps({"version": 0}).encode(), method="POST",
                                     headers={"authorization": f"Bearer {admin_token}", "content-type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30):
            pass
    except OSError as err:  # HTTPError included: a wrong token, admin routes off
        raise SystemExit(f"rl_on_cpu: setting the fleet's version back to 0 through {url}: {err}") from None


def proxy_captures(url: str) -> int | None:
    """The calls a proxy (process or isolate) captured since it started, from its /metrics (None
    when it has none to give)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as res:
            text = res.read().decode()
    except OSError:
        return None
    lines = [line for line in text.splitlines() if line.startswith("polar_proxy_captures_total{")]
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in lines)


def train(
    args: argparse.Namespace, out: Path, model: Any, check_model: Any, optimizer: torch.optim.Optimizer,
    weight_sync: VllmWeightSync, client: ControlClient, store: Store | None, engine_url: str, t_start: float,
) -> int:  # fmt: skip
    run_id = f"rl-s{args.seed}-{secrets.token_hex(3)}"
    version = 0  # the trainer's weights; the engine serves the same after each sync
    snapshots: dict[int, dict[str, torch.Tensor]] = {0: {k: v.detach().clone() for k, v in model.state_dict().items()}}
    curve = (out / "curve.jsonl").open("w")
    failures: list[str] = []

    def submit(iteration: int) -> Batch:
        ids = [client.submit(task_for(run_id, iteration, g, args))["task_id"] for g in range(args.groups)]
        return Batch(iteration, ids, time.monotonic())

    def collect(batch: Batch) -> list[Trace]:
        traces: list[Trace] = []
        for task_id in batch.task_ids:
            client.wait(task_id, timeout_s=600, poll_s=0.25)
            traces.extend(client.shard(task_id))
        return traces

    def sync(new_version: int) -> float:
        t0 = time.monotonic()
        if args.broken == "skip-reload":
            # A sync that silently does nothing: the engine keeps the old weights under the new name.
            weight_sync.set_version(new_version)
            return time.monotonic() - t0
        # The proxy reads /weight_info before and after every call: nothing to tell it.
        try:
            return weight_sync.push(model, new_version).seconds
        except WeightSyncError as err:  # e.g. the engine reports another version than the one pushed
            failures.append(str(err))
            return time.monotonic() - t0

    pending = submit(0)
    for iteration in range(args.iterations):
        t_iter = time.monotonic()
        traces = collect(pending)
        rollout_s = time.monotonic() - pending.submitted_at
        nxt = submit(iteration + 1) if args.mode == "one-step-off" and iteration + 1 < args.iterations else None

        # --- checks on what the shard says (every iteration, both modes) ------------------------
        sessions: dict[str, list[Trace]] = {}
        for t in traces:
            sessions.setdefault(t.session_id, []).append(t)
        rewards = [float(np.mean([t.reward or 0.0 for t in ts])) for ts in sessions.values()]
        problems: list[str] = []
        if len(sessions) != args.groups * args.group_size:
            problems.append(f"{len(sessions)} sessions with traces, expected {args.groups * args.group_size}")
        for sid, ts in sessions.items():
            if len(ts) != 1:
                problems.append(f"session {sid}: {len(ts)} traces (token-in-token-out should splice the two calls into one)")
        not_from_engine: list[str] = []
        noted_sessions: set[str] = set()
        captures_read = 0
        capture_versions: dict[str, int] = {}  # "start..end" of each call, as its capture records them
        for task_id in pending.task_ids if store is not None else []:  # the captures: versions the engine reported
            for key in [k for k in store.list(f"captures/{task_id}/") if k.endswith(".json.gz")]:
                name = key.rsplit("/", 1)[-1]
                capture = json.loads(gzip.decompress(store.get(key) or b""))
                captures_read += 1
                span = f"{capture.get('policy_version')}..{capture.get('policy_version_end')}"
                capture_versions[span] = capture_versions.get(span, 0) + 1
                if args.proxy and capture.get("replica") != engine_url:
                    problems.append(f"capture {name}: sampled by {capture.get('replica')}, not the engine {engine_url}")
                source, note = capture.get("policy_version_source"), capture.get("policy_version_note")
                if source == "engine":
                    continue
                if note:  # the engine's read failed under load: the trainer's version (or none), reported
                    not_from_engine.append(f"{name}: {source or 'unknown'} ({note})")
                    noted_sessions.add(capture["session_id"])
                else:
                    problems.append(f"capture {name}: policy_version_source {source!r}, not the engine, "
                                    "and no policy_version_note saying why")  # fmt: skip
        for line in not_from_engine:
            print(f"rl_on_cpu: iteration {iteration}: capture version not the engine's: {line}", flush=True)
        for t in traces:
            if t.status != "COMPLETED":
                problems.append(f"session {t.session_id}: status {t.status}")
            if version_of(t.policy_version) is None or version_of(t.policy_version_end) is None:
                # Unknown with a reason on its captures is reported above and dropped by the filter below.
                if t.session_id not in noted_sessions:
                    problems.append(f"session {t.session_id}: versions {t.policy_version!r}..{t.policy_version_end!r}, not integers")
            if t.response_logprobs is None or not np.isfinite(t.response_logprobs[t.loss_mask == 1]).all():
                problems.append(f"session {t.session_id}: a trainable token lacks a logprob")
            if mask_runs(t.loss_mask) < 2:
                problems.append(f"session {t.session_id}: {mask_runs(t.loss_mask)} sampled turn(s) in the trace, expected 2")
        versions = [version_of(t.policy_version) for t in traces]
        known = [v for v in versions if v is not None]
        sampled_by = min(known) if known else None

        # --- staleness: samples older than the trainer's weights, dropped past the limit --------
        kept = filter_traces(traces, TraceFilter(current_version=version, max_staleness=args.max_staleness,
                                                 drop_unknown_version=True))  # fmt: skip
        dropped_stale = len(traces) - len(kept)
        stale = [t for t in kept if (version_of(t.policy_version) or 0) < version]
        crossed = [t for t in kept if t.policy_version != t.policy_version_end]
        if args.mode == "sync" and (stale or crossed):
            problems.append(f"sync mode: {len(stale)} stale and {len(crossed)} crossing samples, expected none")

        # --- the GRPO step; logprob check under the weights that sampled each trace ------------
        t_train = time.monotonic()
        advantages = grpo_advantages(kept)
        masks = []
        for t in kept:
            m = t.loss_mask.astype(np.float32)
            if args.broken == "mask-shift":
                m = np.concatenate([[0.0], m[:-1]]).astype(np.float32)
            masks.append(torch.from_numpy(m))
        total_tokens = float(sum(m.sum() for m in masks)) or 1.0
        diffs: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        optimizer.zero_grad(set_to_none=True)
        # Per trace: the positions the loss uses and the ones the engine sampled (the same
        # unless --break mask-shift); logprobs are computed at their union, in chunks of traces.
        originals = [t.loss_mask.astype(bool) for t in kept]
        selects = [m.numpy().astype(bool) | o for m, o in zip(masks, originals)]
        for lo in range(0, len(kept), args.chunk):
            part = list(range(lo, min(lo + args.chunk, len(kept))))
            new_lps = response_logprobs(model, [kept[i] for i in part], [selects[i] for i in part])
            # The logprob check: every turn recomputed under the version that sampled it.
            by_version: dict[int, dict[int, np.ndarray]] = {}
            for k, i in enumerate(part):
                for v, where in turns_by_version(kept[i]).items():
                    by_version.setdefault(v, {})[k] = where
            for v, turns in by_version.items():
                ks = list(turns)
                if v == version:
                    under = [new_lps[k].detach() for k in ks]
                elif v in snapshots:
                    check_model.load_state_dict(snapshots[v])
                    with torch.no_grad():
                        under = response_logprobs(check_model, [kept[part[k]] for k in ks], [selects[part[k]] for k in ks])
                else:
                    continue
                for k, lp_v in zip(ks, under):
                    i = part[k]
                    captured = torch.from_numpy(np.asarray(kept[i].response_logprobs, dtype=np.float32)[selects[i]])
                    checked = (masks[i].numpy()[selects[i]] > 0) & turns[k][selects[i]]
                    diffs.append((lp_v - captured)[torch.from_numpy(checked)].abs().numpy())
            loss = torch.zeros(())
            for k, i in enumerate(part):
                t, mask = kept[i], masks[i].numpy()[selects[i]]
                captured = torch.from_numpy(np.asarray(t.response_logprobs, dtype=np.float32)[selects[i]])
                a = float(advantages[i])
                # Decoupled PPO (the proximal policy is the trainer's weights at this step, the
                # behaviour policy the engine's captured logprobs): the importance weight
                # pi_theta / pi_behaviour corrects for samples of an older version and is
                # truncated at --is-cap; the PPO ratio against the proximal policy is clipped.
                weight = torch.exp(new_lps[k].detach() - captured).clamp(max=args.is_cap)
                ratio = torch.exp(new_lps[k] - new_lps[k].detach())
                surrogate = weight * torch.minimum(ratio * a, torch.clamp(ratio, 1 - args.clip, 1 + args.clip) * a)
                trainable = torch.from_numpy(mask)
                loss = loss - (surrogate * trainable).sum() / total_tokens
                weights.append(weight[trainable > 0].numpy())
            if loss.requires_grad:
                loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        train_s = time.monotonic() - t_train
        all_diffs = np.concatenate(diffs) if diffs else np.zeros(0, dtype=np.float32)
        diff_mean = float(all_diffs.mean()) if all_diffs.size else None
        diff_max = float(all_diffs.max()) if all_diffs.size else None
        off_turn = sum(int(((m.numpy() > 0) & ~sampled_positions(t)).sum()) for m, t in zip(masks, kept))
        if off_turn:
            problems.append(f"the loss trains {off_turn} tokens outside every sampled turn")
        checkable = sum(
            int(((masks[i].numpy() > 0) & where).sum()) for i, t in enumerate(kept) for where in turns_by_version(t).values()
        )  # fmt: skip
        if all_diffs.size != checkable:  # a turn sampled by a version whose weights were not kept
            problems.append(f"{checkable - all_diffs.size} of {checkable} sampled tokens not checked: their version's weights are gone")
        if diff_max is None:
            problems.append("no trace could be checked against the weights that sampled it")
        elif diff_max > args.logprob_tolerance:
            problems.append(f"trainer vs captured logprob differ by up to {diff_max:.3g} nats (> {args.logprob_tolerance})")

        # --- push the new weights; the next iteration samples with them ------------------------
        version += 1
        snapshots[version] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        for old in [v for v in snapshots if v < version - args.max_staleness - 1]:
            del snapshots[old]
        sync_s = sync(version)
        if args.mode == "sync" and iteration + 1 < args.iterations:
            nxt = submit(iteration + 1)
        row = {
            "iteration": iteration,
            "policy_version": sampled_by,
            "mean_reward": float(np.mean(rewards)) if rewards else 0.0,
            "rewards": rewards,
            "samples": len(kept),
            "trainable_tokens": int(sum(int(t.loss_mask.sum()) for t in kept)),
            "stale_samples": len(stale),
            "dropped_stale": dropped_stale,
            "crossed_samples": len(crossed),
            "captures_read": captures_read if store is not None else None,
            "capture_versions": dict(sorted(capture_versions.items())),
            "captures_not_versioned_by_engine": len(not_from_engine),
            "checked_tokens": int(all_diffs.size),
            "logprob_diff_mean": diff_mean,
            "logprob_diff_max": diff_max,
            "importance_weight_mean": float(np.concatenate(weights).mean()) if weights else None,
            "versions": {str(v): versions.count(v) for v in sorted(set(known))},
            "trained_version": version - 1,
            "rollout_s": round(rollout_s, 2),
            "train_s": round(train_s, 2),
            "sync_s": round(sync_s, 3),
            "wall_s": round(time.monotonic() - t_iter, 2),
            "problems": problems[:10],
        }
        curve.write(json.dumps(row) + "\n")
        curve.flush()
        dm = "n/a" if diff_mean is None else f"{diff_mean:.1e}"
        dx = "n/a" if diff_max is None else f"{diff_max:.1e}"
        print(f"it {iteration:3d} v{sampled_by} reward {row['mean_reward']:.3f} samples {len(kept)} "
              f"stale {len(stale)} crossed {len(crossed)} lp diff {dm}/{dx} wall {row['wall_s']:.1f}s"
              f"{' PROBLEMS: ' + '; '.join(problems[:3]) if problems else ''}", flush=True)  # fmt: skip
        failures.extend(f"iteration {iteration}: {p}" for p in problems)
        if failures:
            break
        if nxt is not None:
            pending = nxt
    curve.close()

    rows = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    (out / "curve.png").write_bytes(
        reward_curve_png([r["policy_version"] or 0 for r in rows], [r["mean_reward"] for r in rows], [r["rewards"] for r in rows])
    )
    first, last3 = rows[0]["mean_reward"], [r["mean_reward"] for r in rows[-3:]]
    print(f"rl_on_cpu: {len(rows)} iterations, reward {first:.3f} -> {np.mean(last3):.3f} (mean of the last "
          f"{len(last3)}), {time.monotonic() - t_start:.0f}s wall; {out / 'curve.jsonl'}, {out / 'curve.png'}")  # fmt: skip
    if failures:
        print("rl_on_cpu: FAILED checks:\n  " + "\n  ".join(failures[:10]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

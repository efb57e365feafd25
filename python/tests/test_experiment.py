"""`python -m polar_rollouts.experiment CONFIG.toml` (docs/experiments.md).

Fast cases: the file's strict checks (an unknown or misspelled key is named, with the nearest
known one), and the stack's cleanup: a process group the experiment started is gone once the
experiment's process is killed with SIGKILL (the watchdog), and the per-session stats read from
token ids. The engine-lane case runs the shipped tool-lookup experiment (mini-swe-agent from
PyPI, multi-turn, token-in-token-out) shrunk to 2 steps on SmolLM2-135M-Instruct and checks the
plumbing, not the learning: versions, TRL's logprobs against the engine's, the files written, and
sessions of several model calls with a command's output between them, kept out of the loss.
The short-answer family (examples/experiments/short-answer.toml: one-call sessions through the
same engine, trainer and plug-in) is checked here for its settings, not run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from support.engine_lane import needs_engine_lane

SRC = ROOT / "python" / "src"
sys.path.insert(0, str(SRC))

from polar_rollouts.experiment.config import ConfigError, check_trainer_args, load  # noqa: E402
from polar_rollouts.experiment.sessions import session_stats  # noqa: E402
from polar_rollouts.trace import Trace, VersionSpan  # noqa: E402

MINIMAL = """
out = "run"
[model]
preset = "smollm2"
[tasks]
train = "train.jsonl"
[trainer]
kind = "trl"
[trainer.args]
num_generations = 2
[budget]
max_steps = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "train.jsonl").write_text('{"instruction": "x"}\n')
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_valid_file_loads_with_paths_relative_to_it(tmp_path: Path) -> None:
    exp = load(write(tmp_path, MINIMAL))
    assert exp.out == tmp_path / "run" and exp.tasks.train == tmp_path / "train.jsonl"
    assert exp.trainer.kind == "trl" and exp.trainer.args == {"num_generations": 2}
    assert exp.eval.every == 5 and exp.checks.logprob_tolerance == 1e-3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("max_steps = 2", "max_step = 2"), 'budget.max_step: unknown key (did you mean "max_steps"?)'),
        (("[budget]", "[budgett]"), 'budgett: unknown key (did you mean "budget"?)'),
        (('kind = "trl"', 'kind = "verl"'), "trainer.kind: 'verl' is not a trainer this command runs"),
        (('preset = "smollm2"', 'preset = "smollm2"\npath = "m"'), "model: give exactly one of"),
        (("max_steps = 2", 'max_steps = "2"'), "budget.max_steps must be a int, not str"),
        (("max_steps = 2", "max_steps = 2\nminutes = true"), "budget.minutes must be a int or float, not bool"),
        (('train = "train.jsonl"', 'train = "nope.jsonl"'), "tasks.train: no file"),
        (("max_steps = 2", ""), "budget.max_steps is required"),
    ],
)
def test_a_wrong_file_is_refused_naming_the_key(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(write(tmp_path, MINIMAL.replace(*change)))
    assert message in str(err.value)


DEMO = {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "Look up x in a.cfg"}],
        "completion": [{"role": "assistant", "content": "```bash\ncat a.cfg\n```"}]}


def test_warmup_is_optional_and_its_demonstrations_are_checked_before_anything_starts(tmp_path: Path) -> None:
    assert load(write(tmp_path, MINIMAL)).warmup is None
    demos = tmp_path / "demos.jsonl"
    demos.write_text(json.dumps(DEMO) + "\n")
    exp = load(write(tmp_path, MINIMAL + '[warmup]\ndemonstrations = "demos.jsonl"\nepochs = 2\n'))
    assert exp.warmup is not None and exp.warmup.demonstrations == demos
    assert (exp.warmup.epochs, exp.warmup.learning_rate, exp.warmup.batch_size) == (2, 5e-5, 8)
    bad = {
        # TRL's messages format, a typo in a key: it would train on nothing, or on the wrong tokens
        json.dumps({**DEMO, "completions": DEMO["completion"]}): "got ['completion', 'completions', 'prompt']",
        json.dumps({**DEMO, "completion": [{"role": "user", "content": "x"}]}): "completion[0].role is 'user'",
        json.dumps({**DEMO, "prompt": [{"role": "user", "content": "x", "name": "n"}]}): "prompt[0] must be",
        json.dumps({**DEMO, "prompt": []}): "prompt must be a non-empty array",
        "{not json": "not JSON",
    }
    for line, message in bad.items():
        demos.write_text(json.dumps(DEMO) + "\n" + line + "\n")
        with pytest.raises(ConfigError) as err:
            load(write(tmp_path, MINIMAL + '[warmup]\ndemonstrations = "demos.jsonl"\n'))
        assert "demos.jsonl:2: " in str(err.value) and message in str(err.value), str(err.value)
    demos.write_text(json.dumps(DEMO) + "\n")
    for extra, message in (("epoch = 2", 'warmup.epoch: unknown key (did you mean "epochs"?)'),
                           ("epochs = 0", "warmup.epochs must be at least 1"),
                           ("learning_rate = 0", "warmup.learning_rate must be > 0")):  # fmt: skip
        with pytest.raises(ConfigError, match=message.replace("(", "\\(").replace(")", "\\)").replace("?", "\\?")):
            load(write(tmp_path, MINIMAL + f'[warmup]\ndemonstrations = "demos.jsonl"\n{extra}\n'))
    with pytest.raises(ConfigError, match="warmup.demonstrations is required"):
        load(write(tmp_path, MINIMAL + "[warmup]\nepochs = 1\n"))
    with pytest.raises(ConfigError, match="warmup.demonstrations: no file"):
        load(write(tmp_path, MINIMAL + '[warmup]\ndemonstrations = "nope.jsonl"\n'))


def test_trainer_args_are_checked_against_grpo_config_fields() -> None:
    fields = ["num_generations", "learning_rate", "temperature", "output_dir"]
    check_trainer_args("f", {"learning_rate": 1e-5}, fields)
    with pytest.raises(ConfigError, match='trainer.args.learning_rat: not a GRPOConfig field \\(did you mean "learning_rate"\\?\\)'):
        check_trainer_args("f", {"learning_rat": 1e-5}, fields)
    with pytest.raises(ConfigError, match="trainer.args.output_dir: set by the runner"):
        check_trainer_args("f", {"output_dir": "x"}, fields)


def test_the_command_exits_2_naming_a_misspelled_key(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("[trainer.args]", "[trainer.arg]"))
    done = subprocess.run([sys.executable, "-m", "polar_rollouts.experiment", str(path), "--check"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert 'trainer.arg: unknown key (did you mean "args"?)' in done.stderr
    # A value GRPOConfig itself refuses is named too, before any engine would start.
    pytest.importorskip("trl")
    path = write(tmp_path, MINIMAL.replace("num_generations = 2", "num_generations = 1"))
    done = subprocess.run([sys.executable, "-m", "polar_rollouts.experiment", str(path), "--check"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert done.returncode == 2 and "[trainer.args]: GRPOConfig refused them: GRPO requires at least 2" in done.stderr


KILLED_PARENT = """
import sys, time
from pathlib import Path
from polar_rollouts.experiment.stack import Watchdog, spawn
out = Path(sys.argv[1])
watchdog = Watchdog(grace_s=1)
# A child that ignores SIGTERM (and its own child): only the watchdog's SIGKILL stops the group.
child = spawn(["sh", "-c", "trap '' TERM; sleep 300 & wait"], out / "child.log", cwd=out, env={})
watchdog.guard(child.pid)
print(child.pid, flush=True)
time.sleep(300)
"""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_a_killed_experiment_leaves_no_process_group_behind(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert parent.stdout is not None
    pgid = int(parent.stdout.readline())
    try:
        assert _group_alive(pgid)
        parent.send_signal(signal.SIGKILL)  # no handler, no finally: only the watchdog is left
        parent.wait()
        deadline = time.monotonic() + 30
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _group_alive(pgid), "the child's process group outlived the killed experiment"
    finally:
        if _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_session_stats_count_calls_tool_results_and_turn_rewards() -> None:
    # A fake tokenizer: one id per character, so the spans are easy to read.
    text = ('<tool_call>{"name": "bash"}</tool_call><|im_end|><|im_start|>tool\n{"returncode": 0, "output": "a"}'
            "<|im_end|><|im_start|>assistant\nok<tool_call>x</tool_call>"
            '<|im_start|>tool\n{"returncode": 2}<|im_start|>assistant\ndone')
    ids = np.array([ord(c) for c in text], dtype=np.int64)
    first_end = text.index("<|im_end|>")
    second = text.index("ok<tool_call>")
    second_end = text.index("<|im_start|>tool", second)
    third = text.index("done")
    mask = np.zeros(len(ids), dtype=np.int8)
    for a, b in ((0, first_end), (second, second_end), (third, len(text))):
        mask[a:b] = 1
    spans = [VersionSpan(a, b, "0", "0") for a, b in ((0, first_end), (second, second_end), (third, len(text)))]
    trace = Trace(task_id="t", session_id="s", sample_index=0, trace_index=0, group_id="g", status="COMPLETED",
                  reward=1.0, finish_reason="stop", prompt_ids=np.array([1], dtype=np.int64), response_ids=ids,
                  loss_mask=mask, response_logprobs=None, version_spans=spans)  # fmt: skip
    stats = session_stats([trace], lambda xs: "".join(chr(x) for x in xs))
    assert (stats.model_calls, stats.tool_calls, stats.tool_results) == (3, 2, 2)
    assert stats.turn_rewards == [1.0, 0.0, None] and stats.process_reward == 0.5
    assert stats.sampled_tokens == int(mask.sum())


def _char_trace(text: str, turns: list[tuple[int, int]]) -> Trace:
    ids = np.array([ord(c) for c in text], dtype=np.int64)
    mask = np.zeros(len(ids), dtype=np.int8)
    for a, b in turns:
        mask[a:b] = 1
    return Trace(task_id="t", session_id="s", sample_index=0, trace_index=0, group_id="g", status="COMPLETED",
                 reward=0.0, finish_reason="stop", prompt_ids=np.array([1], dtype=np.int64), response_ids=ids,
                 loss_mask=mask, response_logprobs=None,
                 version_spans=[VersionSpan(a, b, "0", "0") for a, b in turns])  # fmt: skip


def test_session_stats_read_mini_swe_agents_text_based_actions() -> None:
    # litellm_textbased: the action is a fenced block, its result a user message with <returncode>.
    text = ("Let me look.\n```mswea_bash_command\ncat a.cfg\n```<|im_end|>\n<|im_start|>user\n"
            "<returncode>0</returncode>\n<output>\nport = 5\n</output><|im_end|>\n<|im_start|>assistant\n"
            "```bash\necho 5 > answer.txt && false\n```<|im_end|>\n<|im_start|>user\n<returncode>1</returncode>"
            "<|im_end|>\n<|im_start|>assistant\nThe answer is `5`.")  # fmt: skip
    first_end = text.index("<|im_end|>")
    second = text.index("```bash")
    second_end = text.index("<|im_end|>", second)
    third = text.index("The answer")
    stats = session_stats([_char_trace(text, [(0, first_end), (second, second_end), (third, len(text))])],
                          lambda xs: "".join(chr(x) for x in xs))  # fmt: skip
    # Prose with an inline `5` is no action; the two fenced blocks are, each with its result.
    assert (stats.model_calls, stats.tool_calls, stats.tool_results) == (3, 2, 2)
    assert stats.turn_rewards == [1.0, 0.0, None]


def test_the_checkpoint_folder_is_a_writable_untied_copy(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    from polar_rollouts.experiment.stack import StackError, prepare_model_dir

    src = tmp_path / "src"
    src.mkdir()
    embed = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    save_file({"model.embed_tokens.weight": embed}, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"tie_word_embeddings": True}))
    for p in src.iterdir():
        p.chmod(0o444)  # a read-only store, as a wheel's or a cache's files can be
    dest = prepare_model_dir(src, tmp_path / "ckpt", log=lambda _: None)
    state = load_file(str(dest / "model.safetensors"))
    assert torch.equal(state["lm_head.weight"], embed) and torch.equal(state["model.embed_tokens.weight"], embed)
    assert json.loads((dest / "config.json").read_text())["tie_word_embeddings"] is False
    assert os.access(dest / "model.safetensors", os.W_OK)
    assert json.loads((src / "config.json").read_text())["tie_word_embeddings"] is True  # the source is untouched
    with pytest.raises(StackError, match="the model's own folder"):
        prepare_model_dir(dest, dest)


def test_short_answer_toml_keeps_the_settings_of_the_measured_runs(tmp_path: Path) -> None:
    """docs/pretrained-on-cpu.md's runs (the former examples/trl_pretrained.py's defaults): 4
    groups of 8, learning rate 2e-5, held-out every 5 steps with 2 sessions each of 48 items,
    32 tokens an answer, 8 sessions at once, 400 steps or 40 minutes."""
    config = tmp_path / "short-answer.toml"
    config.write_text((ROOT / "examples" / "experiments" / "short-answer.toml").read_text())
    subprocess.run([sys.executable, str(ROOT / "examples" / "experiments" / "short_answer_tasks.py"),
                    "--out", str(tmp_path / "short-answer")], check=True, capture_output=True)  # fmt: skip
    exp = load(config)
    assert exp.model.preset == "smollm2" and exp.serve.run == 8 and exp.seed == 0
    assert exp.trainer.args == {"per_device_train_batch_size": 32, "num_generations": 8, "temperature": 1.0,
                                "learning_rate": 2e-5}  # fmt: skip
    assert (exp.eval.every, exp.eval.generations, exp.eval.before_first_step) == (5, 2, True)
    assert (exp.budget.max_steps, exp.budget.minutes, exp.checks.logprob_tolerance) == (400, 40, 1e-3)
    held = [json.loads(line) for line in exp.tasks.held_out.read_text().splitlines()]  # type: ignore[union-attr]
    train = [json.loads(line) for line in exp.tasks.train.read_text().splitlines()]
    assert (len(train), len(held)) == (175, 48)
    assert {t["agent"]["sampling"]["max_tokens"] for t in train + held} == {32}
    pytest.importorskip("trl")
    from polar_rollouts.experiment.trl_run import grpo_config

    got = grpo_config(exp)
    assert (got.lr_scheduler_type, got.beta, got.use_cpu) == ("constant", 0.0, True)


def test_tool_lookup_demonstrations_solve_their_tasks_and_share_nothing_with_training_or_held_out(tmp_path: Path) -> None:
    """The shipped tool-lookup.toml's [warmup] file: each demonstrated session reads its file and
    writes the value that file holds; no demonstrated file, key or value is a training or held-out
    task's (the warm-up teaches the form, RL and held-out ask for files it never showed)."""
    import re

    subprocess.run([sys.executable, str(ROOT / "examples" / "experiments" / "tool_lookup_tasks.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)  # fmt: skip
    shipped = (ROOT / "examples" / "experiments" / "tool-lookup.toml").read_text()
    config = tmp_path / "exp.toml"
    config.write_text(shipped.replace('"tool-lookup/', f'"{tmp_path}/'))
    exp = load(config)
    assert exp.warmup is not None and exp.warmup.demonstrations == tmp_path / "demonstrations.jsonl"
    rows = [json.loads(line) for line in exp.warmup.demonstrations.read_text().splitlines()]
    assert len(rows) == 48
    tasks = [json.loads(line) for name in ("train.jsonl", "held-out.jsonl") for line in (tmp_path / name).read_text().splitlines()]
    files = {t["metadata"]["file"] for t in tasks}
    keys = {t["metadata"]["key"] for t in tasks}
    values = {re.search(r"= (\d+)$", t["evaluator"]["config"]["command"]).group(1) for t in tasks}  # type: ignore[union-attr]
    for read, written, submit in zip(rows[0::3], rows[1::3], rows[2::3]):
        file = re.fullmatch(r"```bash\ncat (\S+)\n```", read["completion"][0]["content"]).group(1)  # type: ignore[union-attr]
        shown = written["prompt"][-1]["content"]
        value = re.fullmatch(r"```bash\necho (\d+) > answer.txt\n```", written["completion"][0]["content"]).group(1)  # type: ignore[union-attr]
        key = next(k for k, v in re.findall(r"(\w+) = (\w+)", shown) if v == value)
        assert file in read["prompt"][1]["content"] and key in read["prompt"][1]["content"], read
        assert shown.startswith("<returncode>0</returncode>\n<output>\n") and f"{key} = {value}" in shown
        assert file not in files and key not in keys and value not in values, (file, key, value)
        assert submit["completion"][0]["content"] == "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
        # One session: each call's prompt is the last one's, its reply and the command's output.
        assert written["prompt"][:-1] == read["prompt"] + read["completion"]
        assert submit["prompt"] == written["prompt"] + written["completion"] + [{"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"}]


def test_a_version_the_engine_did_not_report_is_a_failed_check(tmp_path: Path) -> None:
    """The engine's version, or the trainer's with the reason the engine's read missed, is
    evidence of the weights that sampled a call; the proxy's own, or the trainer's with no reason,
    is not (the check the former test_trl_pretrained.py made on every capture)."""
    import gzip

    from polar_rollouts.experiment.capture_versions import capture_versions

    def capture(name: str, **fields: object) -> None:
        path = tmp_path / "store" / "captures" / "t1" / "t1-0" / f"{name}.json.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(json.dumps({"task_id": "t1", **fields}).encode()))

    capture("a", policy_version="3", policy_version_source="engine")
    capture("b", policy_version="3", policy_version_source="trainer", policy_version_note="weight_info timed out")
    capture("c", policy_version=None, policy_version_source=None)
    assert capture_versions(tmp_path / "store") == ({"engine": 1, "trainer": 1, "unknown": 1}, [])
    capture("d", policy_version="7", policy_version_source="proxy")
    capture("e", policy_version="3", policy_version_source="trainer")
    (tmp_path / "store" / "captures" / "t1" / "t1-0" / "f.json.gz").write_bytes(b"not gzip")
    counts, problems = capture_versions(tmp_path / "store")
    assert counts == {"engine": 1, "trainer": 2, "unknown": 1, "proxy": 1}
    assert [p.split(": ", 1)[0] for p in problems] == [f"capture captures/t1/t1-0/{n}.json.gz" for n in "def"], problems
    assert "version 7 named by proxy, not by the engine" in problems[0]
    assert "named by trainer, with no note" in problems[1]


@needs_engine_lane
def test_two_steps_of_the_tool_lookup_experiment_on_smollm2(tmp_path: Path) -> None:
    """The shipped tool-lookup experiment, shrunk: its warm-up on 2 demonstrated tasks,
    then 2 steps of 1 group of 2 sessions, 1 held-out
    task before and after, at most 2 model calls of 24 tokens a session. The action pattern is
    widened to the whole reply so every first reply runs as a command (SmolLM2 writes a well-formed
    block in about 1 reply of 4, docs/experiments.md): the test needs a tool result every time."""
    pytest.importorskip("trl")
    from polar_rollouts.shards import read_shard_file
    from transformers import AutoTokenizer

    tasks = tmp_path / "tasks"
    subprocess.run([sys.executable, str(ROOT / "examples" / "experiments" / "tool_lookup_tasks.py"), "--train", "2",
                    "--held-out", "1", "--demonstrations", "2", "--max-tokens", "24", "--step-limit", "2", "--out", str(tasks)],
                   check=True)  # fmt: skip
    for name in ("train.jsonl", "held-out.jsonl"):
        rows = [json.loads(line) for line in (tasks / name).read_text().splitlines()]
        for row in rows:
            row["agent"]["settings"]["config"]["model"]["action_regex"] = r"(?s)^(.*\S.*)$"
        (tasks / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    shipped = (ROOT / "examples" / "experiments" / "tool-lookup.toml").read_text()
    config = tmp_path / "exp.toml"
    config.write_text(
        shipped.replace('"tool-lookup/train.jsonl"', f'"{tasks}/train.jsonl"')
        .replace('"tool-lookup/held-out.jsonl"', f'"{tasks}/held-out.jsonl"')
        .replace('"tool-lookup/demonstrations.jsonl"', f'"{tasks}/demonstrations.jsonl"')
        .replace("per_device_train_batch_size = 16", "per_device_train_batch_size = 2")
        .replace("num_generations = 8", "num_generations = 2")
        .replace("every = 5", "every = 2")
        .replace("\ngenerations = 2", "\ngenerations = 1")
        .replace("max_steps = 200", "max_steps = 2")
        .replace("run = 8", "run = 2")
    )
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "polar_rollouts.experiment", str(config), "--out", str(out), "--seed", "1"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    rows = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    assert [r["step"] for r in train] == [1, 2] and [r["step"] for r in evals] == [0, 2]
    for r in train:
        assert r["logp_diff_max"] is not None and r["logp_diff_max"] < 1e-3, r
        # Step k samples with the weights of step k - 1, named by that integer (never "default").
        assert set(r["versions"]) <= {str(r["step"] - 1), "None"} and r["unknown_versions"] < 4, r
        assert r["model_calls_per_session"] >= 2 and r["tool_results_per_session"] >= 1, r
        assert r["sampled_tokens"] > 0 and r["sync_s"] > 0, r
        assert r["engine_samples"] > 0 and r["engine_generation_tokens"] >= r["sampled_tokens"], r
    for r in evals:
        assert r["wrong_versions"] == [] and r["sessions"] == 1 and r["failed_sessions"] == 0, r
    assert "step    1 reward" in done.stdout and "engine busy" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problems"] == [] and summary["steps"] == 2
    assert summary["heldout_before"] == evals[0]["heldout_success"]
    # [warmup] ran before the engine started: 2 demonstrated tasks, 6 rows, one step of 8.
    assert summary["warmup"]["demonstrations"] == 6 and summary["warmup"]["optimizer_steps"] == 1, summary
    assert summary["warmup"]["loss_first"] is not None
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "checkpoints" / "checkpoint-2").is_dir()

    # A training session in the shard: one trace over its calls (spliced token-in-token-out), the
    # command's output between the sampled turns, as context with loss mask 0.
    tok = AutoTokenizer.from_pretrained(out / "model")
    traces = [t for f in sorted((out / "store" / "trajectories").glob("lookup-*.parquet")) for t in read_shard_file(f)]
    multi = [t for t in traces if not t.orphan and t.version_spans and len(t.version_spans) >= 2]
    assert multi, [(t.session_id, len(t.version_spans or [])) for t in traces]
    t = multi[0]
    mask = t.loss_mask.tolist()
    between = t.response_ids.tolist()[t.version_spans[0].end : t.version_spans[1].start]
    assert "<returncode>" in tok.decode(between)
    assert not any(mask[t.version_spans[0].end : t.version_spans[1].start])
    assert all(mask[s.start : s.end].count(1) > 0 for s in t.version_spans)


def test_summary_reports_the_outcome_reward_not_trls_weighted_sum() -> None:
    # A row as the runner writes it: TRL's logged "reward" is outcome + 0.2 x process (above 1 here).
    from polar_rollouts.experiment.report import summary

    rows = [
        {"kind": "eval", "step": 0, "heldout_success": 0.5},
        {"kind": "train", "step": 1, "reward": 1.0083, "reward_mean": 0.875, "logp_diff_max": 1e-5},
        {"kind": "train", "step": 2, "reward": 0.9, "reward_mean": 0.75, "logp_diff_max": 2e-5},
        {"kind": "eval", "step": 2, "heldout_success": 0.75},
    ]
    got = summary("t", 0, rows, 10.0, {})
    assert (got["train_reward_first"], got["train_reward_last"]) == (0.875, 0.75)
    assert got["heldout_gain_points"] == 25.0 and got["logp_diff_max"] == 2e-5

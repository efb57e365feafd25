"""The pure parts of the NeMo Gym agent: a trace cut into model calls, a row into a task, a
result into NeMo Gym's answer. The real collection runs in test/integration/nemo-gym.test.ts."""

from __future__ import annotations

from typing import Any

import pytest

from polar_rollouts import SessionResult, Trace
from polar_rollouts.model_calls import model_calls
from polar_rollouts.nemo_gym import RowError, aggregate_metrics, task_for_row, verify_response
from polar_rollouts.nemo_gym.rows import parse_row_fields, repeat_key, row_identity

from support.rows import row


def trace(**kw: Any) -> Trace:
    return Trace.from_row(row("s-0", **kw))


def test_calls_are_the_sampled_runs_with_the_whole_context_as_prompt() -> None:
    t = trace(response=[10, 11, 12, 13, 14], mask=[1, 1, 0, 1, 1], logprobs=[-0.5, -0.25, 0.0, -1.0, -2.0])
    calls = model_calls(t)
    assert [(c.prompt_ids, c.generation_ids, c.generation_logprobs) for c in calls] == [
        ([1, 2, 3], [10, 11], [-0.5, -0.25]),
        ([1, 2, 3, 10, 11, 12], [13, 14], [-1.0, -2.0]),
    ]
    # NeMo RL's contiguity rule: each prompt starts with the previous prompt and generation.
    assert calls[1].prompt_ids[: len(calls[0].prompt_ids) + 2] == calls[0].prompt_ids + calls[0].generation_ids


def test_a_turn_boundary_inside_a_sampled_run_splits_it() -> None:
    spans = [
        {"start": 0, "end": 2, "version_start": None, "version_end": None},
        {"start": 2, "end": 4, "version_start": None, "version_end": None},
    ]
    t = trace(response=[10, 11, 12, 13], mask=[1, 1, 1, 1], version_spans=spans)
    assert [(c.start, c.end) for c in model_calls(t)] == [(0, 2), (2, 4)]
    assert [(c.start, c.end) for c in model_calls(trace(response=[10, 11, 12, 13], mask=[1, 1, 1, 1]))] == [(0, 4)]


def test_a_trace_without_logprobs_is_refused() -> None:
    t = trace()
    t.response_logprobs = None
    with pytest.raises(ValueError, match="no logprobs"):
        model_calls(t)


ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "Say hi."}], "temperature": 0.7},
    "_ng_task_index": 3,
    "_ng_rollout_index": 1,
    "agent_ref": {"name": "polar_agent"},
}
TEMPLATE = {
    "agent": {"harness": "shell", "settings": {"command": "x"}},
    "timeout_seconds": 60,
    "evaluator": {"strategy": "test_on_output", "config": {"command": "test -f hello.txt"}},
}


def test_a_row_becomes_the_template_task_with_its_instruction_and_sampling() -> None:
    base, task = task_for_row(ROW, TEMPLATE)
    assert base == "t3"
    assert task == {
        "instruction": "Say hi.",
        "timeout_seconds": 60,
        "evaluator": TEMPLATE["evaluator"],
        "agent": {"harness": "shell", "settings": {"command": "x"}, "sampling": {"temperature": 0.7}},
    }
    assert TEMPLATE["agent"] == {"harness": "shell", "settings": {"command": "x"}}  # not mutated


def test_the_allowed_polar_task_fields_win_over_template_and_request() -> None:
    own = {"task_id": "hello", "instruction": "Do it.", "agent": {"sampling": {"temperature": 1.0}}}
    base, task = task_for_row({**ROW, "polar_task": own}, TEMPLATE)
    assert base == "hello"
    assert task["instruction"] == "Do it."
    assert task["agent"]["sampling"] == {"temperature": 1.0}
    assert task["agent"]["harness"] == "shell"


# Issue 41 item 7: a row replacing the evaluator's check with `true` scored 1.0 where the honest
# row scored 0.0; rows also set the harness command, huge limits and env. Each is refused by name.
@pytest.mark.parametrize(
    ("own", "named"),
    [
        ({"evaluator": {"config": {"command": "true"}}}, "polar_task.evaluator"),
        ({"agent": {"settings": {"command": "cat /etc/passwd"}}}, "polar_task.agent.settings"),
        ({"agent": {"env": {"X": "1"}, "sampling": {"temperature": 1.0}}}, "polar_task.agent.env"),
        ({"agent": {"proxy_limits": {"max_in_flight": 4096}}}, "polar_task.agent.proxy_limits"),
        ({"runtime": {"limits": {"memory_mb": 1000000}}}, "polar_task.runtime"),
        ({"num_samples": 100}, "polar_task.num_samples"),
        ({"timeout_seconds": 604800}, "polar_task.timeout_seconds"),
    ],
)
def test_a_row_setting_a_field_the_operator_did_not_allow_is_refused_by_name(own: dict[str, Any], named: str) -> None:
    with pytest.raises(RowError, match=f"^{named}: a row may not set this field"):
        task_for_row({**ROW, "polar_task": own}, TEMPLATE)


def test_the_operator_allowlist_widens_what_rows_may_set() -> None:
    own = {"builder": {"strategy": "per_request"}, "evaluator": {"config": {"command": "true"}}}
    allowed = parse_row_fields("instruction,task_id,agent.sampling,builder")
    with pytest.raises(RowError, match="polar_task.evaluator"):
        task_for_row({**ROW, "polar_task": own}, TEMPLATE, allowed)
    _, task = task_for_row({**ROW, "polar_task": {"builder": own["builder"]}}, TEMPLATE, allowed)
    assert task["builder"] == {"strategy": "per_request"}
    with pytest.raises(ValueError, match="num_samples"):
        parse_row_fields("num_samples")


def test_rows_with_only_a_row_index_get_distinct_ids_per_prompt_and_one_per_repeat() -> None:
    # TRL's nemo_gym_rollout_func: `_rowidx` only, one per generation.
    a0, a1 = ({**ROW, "_rowidx": i} for i in (0, 1))
    for r in (a0, a1):
        del r["_ng_task_index"], r["_ng_rollout_index"]
    b0 = {**a0, "responses_create_params": {"input": "Say bye."}}
    assert task_for_row(a0, TEMPLATE)[0] == task_for_row(a1, TEMPLATE)[0]
    assert task_for_row(a0, TEMPLATE)[0] != task_for_row(b0, TEMPLATE)[0]
    assert row_identity(a0) == row_identity(a1) != row_identity(b0)
    assert repeat_key(a0) == ("_rowidx", 0) and repeat_key(a1) == ("_rowidx", 1)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"_ng_task_index": 0}, "responses_create_params"),
        ({**ROW, "responses_create_params": {"input": 3}}, "responses_create_params.input"),
        ({**ROW, "responses_create_params": {"input": [{"type": "function_call_output"}]}}, r"input\[0\]"),
        ({**ROW, "polar_task": []}, "polar_task"),
        ({**ROW, "_ng_rollout_index": -1}, "_ng_rollout_index"),
        ({**ROW, "polar_task": {"task_id": "a..b"}}, "not a valid Polar id"),
    ],
)
def test_bad_rows_name_the_field(bad: dict[str, Any], field: str) -> None:
    with pytest.raises(RowError, match=field):
        task_for_row(bad, TEMPLATE)


def result(status: str = "COMPLETED", reward: float | None = 1.0) -> SessionResult:
    t = row("s-0", reward=reward, status=status)
    trace_doc = {k: t[k] for k in ("prompt_ids", "response_ids", "loss_mask", "response_logprobs")}
    return SessionResult.from_json(
        {
            "v": 1, "task_id": "t", "session_id": "s-0", "sample_index": 0, "attempt": 0, "status": status,
            "reward": reward, "agent": {"final_answer": "hi"}, "trajectory": {"traces": [trace_doc]},
        }
    )  # fmt: skip


def test_the_answer_carries_reward_and_each_calls_tokens() -> None:
    answer = verify_response(ROW, result(), "policy")
    assert answer["reward"] == 1.0 and "_ng_failure_class" not in answer
    assert answer["_ng_task_index"] == 3 and answer["responses_create_params"] == ROW["responses_create_params"]
    items = answer["response"]["output"]
    assert [i["generation_token_ids"] for i in items] == [[10, 11], [13]]
    assert items[1]["prompt_token_ids"] == [1, 2, 3, 10, 11, 12]
    assert items[1]["generation_log_probs"] == [-1.0]
    assert [i["content"][0]["text"] for i in items] == ["", "hi"]


def test_an_unrewarded_session_goes_to_the_failures_file() -> None:
    answer = verify_response(ROW, result(status="ERROR", reward=None), "policy")
    assert answer["_ng_failure_class"] == "polar_no_reward"
    assert "without a reward" in answer["error"]


def test_failed_rollouts_are_counted_apart_from_the_mean_reward() -> None:
    ok = verify_response(ROW, result(), "policy")
    failed = verify_response(ROW, result(status="ERROR", reward=None), "policy")
    short = {**ok, "polar": {**ok["polar"], "group_id": "g7", "group_short": "split"}, "_ng_failure_class": "polar_group_short"}
    metrics = aggregate_metrics({"verify_responses": [ok, failed, ok, short, short]})["agent_metrics"]
    assert metrics == {
        "mean/reward": 1.0,
        "num_rollouts": 5,
        "num_rewarded": 2,
        "num_failed": 3,
        "num_short_groups": 1,  # two rows of one short group
    }

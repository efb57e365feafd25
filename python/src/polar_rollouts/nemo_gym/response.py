"""A finished Polar session as NeMo Gym's ``/run`` answer (``BaseVerifyResponse``).

NeMo Gym's model (nemo_gym ``base_resources_server.BaseVerifyResponse``) is the row plus
``response`` (an OpenAI ``Response`` whose output items may carry ``prompt_token_ids``,
``generation_token_ids`` and ``generation_log_probs``, the ``...ForTraining`` items) and
``reward``. NeMo RL and TRL train on those three keys of each output item, and both check that
every item's prompt starts with the previous item's prompt and generation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..model_calls import model_calls
from ..results import SessionResult


def verify_response(row: Mapping[str, Any], result: SessionResult, model: str) -> dict[str, Any]:
    """The row, echoed as NeMo Gym agents do, with ``response``, ``reward`` and ``polar``.

    One assistant ``message`` item per model call of every trace, in order. Polar keeps token ids,
    not each call's text: the items' text is empty except the last, which holds the harness's
    final answer (TRL counts a rollout without a non-empty message as failed).

    A session that did not complete or has no reward goes to NeMo Gym's failures file
    (``_ng_failure_class``) instead of the rollouts: reward 0.0 there is a placeholder, never data.
    """
    items: list[dict[str, Any]] = []
    for trace in result.traces:
        for k, call in enumerate(model_calls(trace)):
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{result.session_id}_{trace.trace_index}_{k}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "", "annotations": []}],
                    "prompt_token_ids": call.prompt_ids,
                    "generation_token_ids": call.generation_ids,
                    "generation_log_probs": call.generation_logprobs,
                }
            )
    final = (result.raw.get("agent") or {}).get("final_answer")
    if items and isinstance(final, str):
        items[-1]["content"][0]["text"] = final
    prompt_tokens = len(items[-1]["prompt_token_ids"]) if items else 0
    generated = sum(len(i["generation_token_ids"]) for i in items)
    answer: dict[str, Any] = {
        **row,
        "response": {
            "id": f"resp_{result.session_id}",
            "object": "response",
            "created_at": time.time(),
            "model": model,
            "output": items,
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "status": "completed" if result.status == "COMPLETED" else "incomplete",
            "usage": {
                "input_tokens": prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": generated,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt_tokens + generated,
            },
        },
        "reward": 0.0 if result.reward is None else result.reward,
        "polar": {
            "task_id": result.task_id,
            "session_id": result.session_id,
            "status": result.status,
            "traces": len(result.traces),
            "evaluation": result.evaluation,
        },
    }
    if result.status != "COMPLETED" or result.reward is None:
        answer["_ng_failure_class"] = f"polar_{result.status.lower()}" if result.reward is not None else "polar_no_reward"
        answer["error"] = result.error or f"session {result.session_id} ended {result.status} without a reward"
    if not items and "_ng_failure_class" not in answer:
        # NeMo RL refuses a result without a trainable item; say why here rather than there.
        answer["_ng_failure_class"] = "polar_no_model_call"
        answer["error"] = f"session {result.session_id} made no model call with token ids"
    return answer


def failed_response(row: Mapping[str, Any], model: str, failure_class: str, reason: str, polar: Mapping[str, Any]) -> dict[str, Any]:
    """A ``/run`` that produced no session result (its task timed out or was cancelled, its group
    never filled) in NeMo Gym's failure shape: a 200 row with ``_ng_failure_class``, which the
    collection writes to its failures file, never an error status that stops the whole collection."""
    return {
        **row,
        "response": {
            "id": f"resp_failed_{polar.get('group_id', 'polar')}",
            "object": "response",
            "created_at": time.time(),
            "model": model,
            "output": [],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "status": "failed",
        },
        "reward": 0.0,
        "polar": dict(polar),
        "_ng_failure_class": failure_class,
        "error": reason,
    }

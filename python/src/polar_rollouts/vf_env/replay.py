"""A finished Polar session, committed to a verifiers trace call by call, the way verifiers'
interception server commits the calls it sees (``verifiers/v1/interception/server.py``):
``graph.prepare_turn(trace, messages, tools).commit(response)`` and a ``ModelCall``.

The messages and tools are the harness's own request, read from the session's captures and
parsed by the verifiers dialect of the API the harness spoke; the assistant message is the
engine's answer (Chat Completions); the tokens are the shard's: each call's whole prompt, its
sampled ids and their logprobs (``model_calls``), so what prime-rl trains on equals the shard.
"""

from __future__ import annotations

import gzip
import inspect
import json
from collections.abc import Callable
from typing import Any

from verifiers.v1 import graph
from verifiers.v1.dialects.anthropic import AnthropicDialect
from verifiers.v1.dialects.chat import ChatDialect
from verifiers.v1.dialects.responses import ResponsesDialect
from verifiers.v1.errors import HarnessError
from verifiers.v1.trace import ModelCall
from verifiers.v1.trace import Trace as VfTrace
from verifiers.v1.types import TurnTokens

from ..model_calls import model_calls
from ..results import SessionResult
from ..store import Store

# Polar's provider names (shared/schemas/capture.ts PROVIDERS) to verifiers' request dialects.
# Gemini's generateContent has no verifiers dialect: such a session is refused, naming it.
_DIALECTS = {"openai_chat": ChatDialect, "anthropic": AnthropicDialect, "openai_responses": ResponsesDialect}


def capture_reader(store: Store, task_id: str, session_id: str) -> Callable[[str], dict[str, Any]]:
    """Reads ``captures/{task}/{session}/{capture_id}.json.gz`` (only the fields stored as is:
    the client's ``request`` and the upstream ``response``)."""

    def read(capture_id: str) -> dict[str, Any]:
        key = f"captures/{task_id}/{session_id}/{capture_id}.json.gz"
        data = store.get(key)
        if data is None:
            raise HarnessError(f"Polar capture {key} is not in the store (is --store the one polar serve writes?)")
        doc = json.loads(gzip.decompress(data))
        if not isinstance(doc, dict):
            raise HarnessError(f"Polar capture {key} is not a JSON object")
        return doc

    return read


def commit_session(trace: VfTrace, result: SessionResult, read_capture: Callable[[str], dict[str, Any]]) -> int:
    """Commits every model call of every Polar trace; returns how many."""
    chat = ChatDialect()
    committed = 0
    for polar_trace in result.traces:
        calls = model_calls(polar_trace)
        capture_ids = list(polar_trace.metadata.get("capture_ids") or [])
        where = f"Polar session {result.session_id} trace {polar_trace.trace_index}"
        if len(capture_ids) != len(calls):
            raise HarnessError(
                f"{where}: {len(calls)} sampled turns but {len(capture_ids)} captures; "
                "cannot pair each call with the request that made it"
            )
        for call, capture_id in zip(calls, capture_ids, strict=True):
            capture = read_capture(capture_id)
            provider = capture.get("provider")
            dialect = _DIALECTS.get(str(provider))
            if dialect is None:
                raise HarnessError(f"{where}: capture {capture_id} speaks {provider!r}, which verifiers has no dialect for")
            request = dialect().parse_request(capture["request"])
            response = chat.parse_response(chat.validate_response(capture["response"]))
            response.tokens = TurnTokens(
                prompt_ids=call.prompt_ids,
                completion_ids=call.generation_ids,
                completion_logprobs=call.generation_logprobs,
            )
            node = _commit(trace, request.messages, request.tools, response)
            trace.calls.append(
                ModelCall(
                    node=node,
                    model=capture.get("model_requested"),
                    endpoint=capture.get("path"),
                    finish_reason=response.finish_reason,
                    usage=response.usage,
                )
            )
            committed += 1
    return committed


def _commit(trace: VfTrace, messages: Any, tools: Any, response: Any) -> int:
    """``prepare_turn(...).commit(...)``. The 0.4.0 wheel takes the tools when the turn is
    prepared; the verifiers commit prime-rl pins (a60a606, also "0.4.0") takes them at commit
    (``prepare_turn(trace, prompt)``, ``commit(response, tools)``). Only the wheel is tested."""
    if "tools" in inspect.signature(graph.PendingTurn.commit).parameters:
        node: int = graph.prepare_turn(trace, messages).commit(response, tools)
    else:
        node = graph.prepare_turn(trace, messages, tools).commit(response)
    return node

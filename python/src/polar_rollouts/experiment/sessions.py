"""What one session did, read from its traces with the policy's own tokenizer: model calls, tool
calls, tool results, and a process reward per turn.

Turns are a trace's ``version_spans`` (one per model call; mask-1 runs for traces without them).
A turn *called a tool* when its sampled text holds a tool call: ``<tool_call>`` (the Hermes format
vLLM's ``hermes`` parser reads, SmolLM2's and Qwen's), or a fenced command block (mini-swe-agent's
text-based mode, ``litellm_textbased``: the action is a ```` ```bash ```` or
```` ```mswea_bash_command ```` block in the reply). A *tool result* is what the harness put after
it: a ``tool`` message (ChatML ``<|im_start|>tool`` or Qwen3's ``<tool_response>``), or in the
text-based mode a user message holding the command's ``<returncode>``; it is context (mask 0),
never trained.

Process reward per turn (``turn_rewards``): the evaluator's ``step_rewards`` when the trace has
them (``test_on_output`` with ``step_rewards = "tool_results"`` reads Qwen3 template tokens);
otherwise 1 for a turn whose tool call ran and came back with exit code 0 (mini-swe-agent 2.x
writes ``"returncode": N``, 1.x ``<returncode>N</returncode>``, the example agents ``(exit N)``), 0 for one that called a tool
that failed or whose call could not be parsed into a result, none for a turn without a call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..trace import Trace

TOOL_CALL = re.compile(r"<tool_call>|```(?:bash|sh|shell|mswea_bash_command)?[ \t]*\n[^`]*?\n```")
TOOL_RESULT = re.compile(r"<\|im_start\|>tool\b|<tool_response>|<\|im_start\|>user\n(?:<exception>|<returncode>)")
RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|\(exit (-?\d+)\)|\"returncode\": (-?\d+)")

Decode = Callable[[list[int]], str]


@dataclass
class SessionStats:
    model_calls: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    sampled_tokens: int = 0
    turn_rewards: list[float | None] = field(default_factory=list)

    @property
    def process_reward(self) -> float:
        """The mean of the turns' process rewards, 0 when no turn got one."""
        got = [r for r in self.turn_rewards if r is not None]
        return sum(got) / len(got) if got else 0.0


def _turns(trace: Trace) -> list[tuple[int, int]]:
    if trace.version_spans:
        return [(s.start, s.end) for s in trace.version_spans]
    mask = trace.loss_mask.tolist()
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(mask):
        if mask[i] == 1:
            j = i
            while j < len(mask) and mask[j] == 1:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def session_stats(traces: Sequence[Trace], decode: Decode) -> SessionStats:
    stats = SessionStats()
    for trace in sorted((t for t in traces if not t.orphan), key=lambda t: t.trace_index):
        ids = trace.response_ids.tolist()
        turns = _turns(trace)
        stats.model_calls += len(turns)
        stats.sampled_tokens += int(trace.loss_mask.sum())
        given = trace.step_rewards
        for k, (start, end) in enumerate(turns):
            sampled = decode(ids[start:end])
            after = decode(ids[end : turns[k + 1][0] if k + 1 < len(turns) else len(ids)])
            called = bool(TOOL_CALL.search(sampled))
            results = TOOL_RESULT.findall(after)
            stats.tool_calls += len(TOOL_CALL.findall(sampled))
            stats.tool_results += len(results)
            if given is not None:
                match = next((s.reward for s in given if s.start <= start < s.end or start <= s.start < end), None)
                stats.turn_rewards.append(match)
            elif not called:
                stats.turn_rewards.append(None)
            else:
                codes = [int(a or b or c) for a, b, c in RETURN_CODE.findall(after)]
                stats.turn_rewards.append(1.0 if results and codes and all(c == 0 for c in codes) else 0.0)
    return stats

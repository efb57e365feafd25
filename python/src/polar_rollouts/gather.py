"""Repeats of one prompt, asked for one at a time, gathered into one Polar task.

A trainer's group (NeMo Gym's ``+num_repeats``, TRL's ``num_generations``, NeMo RL's
``num_generations_per_prompt``, verifiers' rollouts per example) arrives as N separate requests
for the same prompt (NeMo Gym ``/run`` calls, verifiers ``Harness.launch`` calls). They become
one task with ``num_samples`` N, so Polar's group (its group id, its per-sample behaviour, its
group shard) is the trainer's group.

How a group forms: the first request of a prompt opens it; every request with the same identity
joins; then one task is submitted and each member waits for its own session. A request after that
starts a new group (a new step's sample, never an old session); one carrying the repeat key of a
member still waiting is a re-send (NeMo Gym re-sends after a dropped connection) and waits for
that member's session.

When the group closes (issue 48 item 9: a group is never split silently):

- size known (``group_size``: the operator's flag, TRL's ``num_generations``, NeMo Gym's
  repeats): only once it has all ``group_size`` members, however slowly they come. Past
  ``group_timeout_s`` from its first member, nothing is submitted and every member fails with
  ``GroupIncomplete``, naming the group and how many came.
- size unknown: ``gather_s`` seconds after its last member joined. A request of the same prompt
  that comes while that group's sessions still run, with a repeat key the group does not hold
  (or no repeat key), shows the group closed short: both groups are marked ``short`` (the
  members' answers say so, ``shorts`` counts them), never passed on as whole groups.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .client import TaskFailed
from .results import SessionResult

# submit(task) -> the group's session results as they land (ControlClient.submit + stream_results).
Drive = Callable[[dict[str, Any]], Iterator[SessionResult]]


@dataclass
class _Member:
    sample_index: int
    answer: Future[SessionResult] = field(default_factory=Future)


class GroupIncomplete(TaskFailed):
    """A group of known size did not get all its members in time; nothing of it was run."""


@dataclass
class _Group:
    task_id: str
    identity: str
    opened: float
    last_join: float
    members: list[_Member] = field(default_factory=list)
    repeats: set[Hashable] = field(default_factory=set)
    closed: bool = False
    running: bool = False
    short: str | None = None  # why the group is known to have closed short


@dataclass
class Ticket:
    identity: str
    repeat: Hashable | None
    group: _Group
    member: _Member
    task: dict[str, Any] | None  # given to the member that submits the group

    @property
    def task_id(self) -> str:
        return self.group.task_id


class Gatherer:
    def __init__(
        self,
        drive: Drive,
        run_id: str,
        *,
        gather_s: float = 2.0,
        group_size: int = 0,
        group_timeout_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._drive = drive
        self._run_id = run_id
        self._gather_s = gather_s
        self._group_size = group_size
        self._group_timeout_s = group_timeout_s
        self._clock = clock
        self._lock = threading.Condition()
        self._open: dict[str, _Group] = {}
        # Size unknown: the last group of each prompt that closed on the window, while it runs.
        self._last: dict[str, _Group] = {}
        self.shorts = 0  # groups found to have closed short (both parts of each split)
        self._waiting: dict[tuple[str, Hashable], tuple[_Group, _Member]] = {}
        self._seq: dict[str, int] = {}

    def run(
        self, identity: str, base: str, task: dict[str, Any], repeat: Hashable | None, *, timeout_s: float
    ) -> tuple[str, int, int, SessionResult]:
        """``(task_id, sample_index, group size, result)`` of this request's session."""
        ticket = self.join(identity, base, task, repeat)
        result = self.wait(ticket, timeout_s=timeout_s)
        return ticket.group.task_id, ticket.member.sample_index, len(ticket.group.members), result

    def join(self, identity: str, base: str, task: dict[str, Any], repeat: Hashable | None) -> Ticket:
        """This request's place in its prompt's group (the group's task id is known at once)."""
        leader = False
        with self._lock:
            found = self._waiting.get((identity, repeat)) if repeat is not None else None
            if found is not None:
                group, member = found
            else:
                opened = self._open.get(identity)
                if opened is None:
                    seq = self._seq.get(base, 0)
                    self._seq[base] = seq + 1
                    now = self._clock()
                    opened = _Group(f"{self._run_id}.{base}.g{seq}", identity, now, now)
                    self._open[identity] = opened
                    leader = True
                    self._check_split(identity, opened, repeat)
                group = opened
                member = _Member(len(group.members))
                group.members.append(member)
                group.last_join = self._clock()
                if repeat is not None:
                    self._waiting[(identity, repeat)] = (group, member)
                    group.repeats.add(repeat)
                if self._group_size and len(group.members) >= self._group_size:
                    self._close(identity, group)
                self._lock.notify_all()
        return Ticket(identity, repeat, group, member, task if leader else None)

    def wait(self, ticket: Ticket, *, timeout_s: float) -> SessionResult:
        """Blocks until the ticket's session has its result (the group's first member also
        closes the group and submits it)."""
        try:
            if ticket.task is not None:
                try:
                    self._wait_closed(ticket.identity, ticket.group)
                except GroupIncomplete as err:
                    with self._lock:
                        members = list(ticket.group.members)
                    for member in members:
                        if not member.answer.done():
                            member.answer.set_exception(err)
                    raise
                threading.Thread(target=self._run_group, args=(ticket.group, ticket.task), daemon=True).start()
            return ticket.member.answer.result(timeout=timeout_s)
        finally:
            with self._lock:
                key = (ticket.identity, ticket.repeat)
                if ticket.repeat is not None and self._waiting.get(key, (None, None))[1] is ticket.member:
                    del self._waiting[key]

    def short_reason(self, ticket: Ticket) -> str | None:
        """Why the ticket's group is known to have closed short (None: not known to)."""
        with self._lock:
            return ticket.group.short

    def _check_split(self, identity: str, new: _Group, repeat: Hashable | None) -> None:
        """Size unknown: a new request of a prompt whose last group closed on the window and still
        runs is that group's late member, unless it repeats a key the group holds (a new sample)."""
        last = self._last.get(identity)
        if last is None or self._group_size:
            return
        if not last.running or (repeat is not None and repeat in last.repeats):
            del self._last[identity]
            return
        why = (
            f"group {last.task_id} closed after {self._gather_s:g} s without a new member, with "
            f"{len(last.members)}; another repeat of its prompt came after, into {new.task_id}: the repeats "
            "were split (give the group size: --group-size, group_size)"
        )
        for g in (last, new):
            if g.short is None:
                self.shorts += 1
            g.short = why
        self._last[identity] = new

    def _close(self, identity: str, group: _Group) -> None:
        group.closed = True
        if self._open.get(identity) is group:
            del self._open[identity]

    def _wait_closed(self, identity: str, group: _Group) -> None:
        with self._lock:
            while not group.closed:
                if self._group_size:
                    left = group.opened + self._group_timeout_s - self._clock()
                else:
                    left = group.last_join + self._gather_s - self._clock()
                if left <= 0:
                    self._close(identity, group)
                    if self._group_size and len(group.members) < self._group_size:
                        raise GroupIncomplete(
                            f"group {group.task_id}: {len(group.members)} of its {self._group_size} repeats came in "
                            f"{self._group_timeout_s:g} s, so none was run (the trainer must send a whole group at "
                            "once: its concurrency at least the group size; or fix the group size given to Polar)"
                        )
                    break
                self._lock.wait(left)
            group.running = True
            if not self._group_size:
                self._last[identity] = group

    def _run_group(self, group: _Group, task: dict[str, Any]) -> None:
        try:
            self._drive_group(group, task)
        finally:
            with self._lock:
                group.running = False
                # A finished group can no longer be split; nothing of it is kept past its answers.
                if self._last.get(group.identity) is group:
                    del self._last[group.identity]

    def _drive_group(self, group: _Group, task: dict[str, Any]) -> None:
        members = {m.sample_index: m for m in group.members}
        try:
            for result in self._drive({**task, "task_id": group.task_id, "num_samples": len(members)}):
                member = members.get(result.sample_index)
                if member is not None and not member.answer.done():
                    member.answer.set_result(result)
            missing = [i for i, m in members.items() if not m.answer.done()]
            if missing:
                raise TaskFailed(f"task {group.task_id}: no session result for samples {missing}")
        except BaseException as err:  # every member's /run must end, with the reason
            for member in members.values():
                if not member.answer.done():
                    member.answer.set_exception(err)

"""Finding what an attempt with an unknown outcome made, before anything is sent again.

A SendMessage whose answer was lost may have made a task: no official A2A server deduplicates
by messageId, so resending it blindly makes a second one. Before a resend, the guarded
integrations look for the task the first attempt made:

* a follow-up (the message names a ``taskId``): ``GetTask`` of that task, and its history;
* a new task: ``ListTasks``, filtered by the message's ``contextId`` when it has one and
  otherwise by a status timestamp from just before the first attempt, each task's history
  searched for the messageId (bounded pages).

Not there: it is looked for once more after a short pause (the first attempt may still be
landing), then the message is resent. Found: that task is the answer. Cannot look (ListTasks
refused, unsupported, failed, or too many tasks to search): the outcome stays unknown, and
nothing is resent.

The search is sans-IO: `find_sent` is a generator that yields `GetTaskQuery`,
`ListTasksQuery` and `Pause` and is sent their answers. The httpx transports (sync and async)
and the a2a-sdk client drive it with their own I/O; the matching lives here, once.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Generator, Iterable

__all__ = [
    "WORK_OPERATIONS",
    "ExactlyOnce",
    "Found",
    "GetTaskQuery",
    "ListTasksQuery",
    "LookupResult",
    "NotFound",
    "Pause",
    "Resolution",
    "SentMessage",
    "TaskPage",
    "Unresolved",
    "adrive",
    "drive",
    "find_sent",
]

WORK_OPERATIONS: Final = frozenset({"SendMessage", "SendStreamingMessage"})
"""The operations that create work: a blind resend of one may make a second task."""


class Resolution(str, enum.Enum):
    """How an unknown outcome of a call that creates work was resolved."""

    FOUND = "found"
    """The task the first attempt made was found: it is the answer; nothing was resent."""
    RESENT = "resent"
    """It was looked for and is not there: the same message was sent again."""
    NOT_FOUND = "not_found"
    """It was looked for and is not there, and the call gave up (no attempt or time left)."""
    UNRESOLVED = "unresolved"
    """It could not be looked for: nothing was resent (`OutcomeUnknown`)."""
    DEDUPLICATING = "deduplicating"
    """The peer is declared to deduplicate by messageId: resent at once, without a look-up."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ExactlyOnce:
    """How a guarded call makes an unknown outcome known before it resends (see the module).

    Attributes:
        deduplicating: the peers (their keys, as the Guard names them) known to deduplicate by
            messageId, or a function of the peer's key saying whether it does. Their unknown
            outcomes are resent at once, as any other retry.
        max_pages: the most ListTasks pages read per look (a busier context is "cannot look").
        page_size: the tasks asked for per page (A2A allows 1 to 100).
        recheck_after: seconds to wait before looking a second time, when the first look found
            nothing (the first attempt may still be landing). 0 looks only once.
        clock_skew: seconds taken off the time of the first attempt for the status timestamp
            filter, for the difference between this machine's clock and the agent's.
        timeout: the longest one look may take, in seconds (under a deadline, at most the
            time left).
        reserve: the share of a call's deadline kept for the look-up: an attempt of a call
            that creates work may use the time left less this share of the deadline (all of
            it when less than twice that share is left), so that a lost answer can still be
            looked up in time.
        wall_clock: the wall clock, in seconds since the epoch (``time.time``), for the status
            timestamp filter.

    """

    deduplicating: Collection[str] | Callable[[str], bool] = ()
    max_pages: int = 5
    page_size: int = 100
    recheck_after: float = 0.5
    clock_skew: float = 300.0
    timeout: float = 10.0
    reserve: float = 0.2
    wall_clock: Callable[[], float] = field(default=time.time, repr=False)

    def __post_init__(self) -> None:
        if self.max_pages < 1:
            msg = "max_pages must be at least 1"
            raise ValueError(msg)
        if not 1 <= self.page_size <= 100:
            msg = "page_size must be from 1 to 100 (the A2A limits of ListTasks)"
            raise ValueError(msg)
        if self.recheck_after < 0 or self.clock_skew < 0 or self.timeout <= 0:
            msg = "recheck_after and clock_skew must be >= 0, timeout > 0"
            raise ValueError(msg)
        if not 0 <= self.reserve < 1:
            msg = "reserve must be from 0 to less than 1 (a share of the deadline)"
            raise ValueError(msg)

    def deduplicates(self, peer: str) -> bool:
        """Whether ``peer`` is declared to deduplicate resent messageIds."""
        declared = self.deduplicating
        if callable(declared):
            return bool(declared(peer))
        return peer in declared


@dataclass(frozen=True, slots=True)
class SentMessage:
    """What identifies a message that was sent: what a look-up searches for.

    Attributes:
        message_id: the message's messageId.
        context_id: its contextId, if it named one.
        task_id: its taskId, if it is a follow-up of a task.
        sent_at: the wall-clock time (seconds since the epoch) just before the first attempt.

    """

    message_id: str
    context_id: str | None = None
    task_id: str | None = None
    sent_at: float | None = None


@dataclass(frozen=True, slots=True)
class GetTaskQuery:
    """Read one task (its history included). Answer: the task, or None if it is not found."""

    task_id: str


@dataclass(frozen=True, slots=True)
class ListTasksQuery:
    """List tasks, newest first (histories and artifacts included). Answer: a `TaskPage`.

    Attributes:
        context_id: only the tasks of this context, if given.
        status_after: only tasks whose status changed at or after this wall-clock time.
        page_token: where the page starts ("" for the first).
        page_size: how many tasks to ask for.

    """

    context_id: str | None
    status_after: float | None
    page_token: str
    page_size: int


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before looking again (the answer is ignored)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class TaskPage:
    """One page of ListTasks: the tasks as the binding gave them, and the next page's token."""

    tasks: tuple[Any, ...]
    next_page_token: str = ""


@dataclass(frozen=True, slots=True)
class Found:
    """What the first attempt made.

    The task as the binding gave it (from `find_sent`), or the call's answer built from it
    (what a look-up hands the Guard).
    """

    value: Any


@dataclass(frozen=True, slots=True)
class NotFound:
    """Looked for, and not there: a resend will not make a second task."""


@dataclass(frozen=True, slots=True)
class Unresolved:
    """Could not look (or not conclusively): the outcome stays unknown; nothing is resent.

    Attributes:
        why: for humans: what stood in the way (never peer text).

    """

    why: str


LookupResult: TypeAlias = "Found | NotFound | Unresolved"
Query: TypeAlias = "GetTaskQuery | ListTasksQuery | Pause"
NOT_FOUND: Final = NotFound()


def find_sent(
    sent: SentMessage,
    settings: ExactlyOnce,
    message_ids: Callable[[Any], Iterable[str]],
) -> Generator[Query, Any, Found | NotFound | Unresolved]:
    """Look for the task that ``sent`` made: yields queries, returns what was found.

    Args:
        sent: the message to look for.
        settings: pages, page size, the second look's pause, the clock skew.
        message_ids: the messageIds in a task's history (the task as the binding gives it).

    """
    looks = 2 if settings.recheck_after > 0 else 1
    for look in range(looks):
        if look:
            yield Pause(settings.recheck_after)
        if sent.task_id:
            task = yield GetTaskQuery(sent.task_id)
            if task is not None and sent.message_id in message_ids(task):
                return Found(task)
            continue
        status_after = None
        if not sent.context_id and sent.sent_at is not None:
            status_after = sent.sent_at - settings.clock_skew
        token = ""
        for _ in range(settings.max_pages):
            page = yield ListTasksQuery(sent.context_id, status_after, token, settings.page_size)
            for task in page.tasks:
                if sent.message_id in message_ids(task):
                    return Found(task)
            token = page.next_page_token
            if not token:
                break
        else:
            return Unresolved(f"more than {settings.max_pages} pages of tasks to search")
    return NOT_FOUND


def drive(
    search: Generator[Query, Any, LookupResult],
    answer: Callable[[GetTaskQuery | ListTasksQuery], Any],
    sleep: Callable[[float], object],
) -> LookupResult:
    """Run a search with sync I/O: ``answer`` each query, ``sleep`` each pause.

    An exception ``answer`` raises ends the search; the caller turns it into `Unresolved`.
    """
    try:
        query = next(search)
        while True:
            reply = sleep(query.seconds) if isinstance(query, Pause) else answer(query)
            query = search.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(
    search: Generator[Query, Any, LookupResult],
    answer: Callable[[GetTaskQuery | ListTasksQuery], Any],
    sleep: Callable[[float], Any],
) -> LookupResult:
    """`drive`, awaiting ``answer`` and ``sleep``."""
    try:
        query = next(search)
        while True:
            reply = sleep(query.seconds) if isinstance(query, Pause) else answer(query)
            query = search.send(await reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]

"""Finding what an attempt with an unknown outcome made, before anything is sent again.

A SendMessage whose answer was lost may have made a task: no official A2A server
deduplicates by messageId, so resending it blindly makes a second one. Before a resend, the
guarded doors look for the task the first attempt made, and resend only when its absence is
*proven*:

* a follow-up (the message names a ``taskId``): ``GetTask`` of that task. Found when the
  messageId is in its history; not there only when the history starts with a user message
  (it was not trimmed);
* a new task: ``ListTasks`` (by the message's ``contextId`` when it has one), artifacts left
  out, every page to the end. The task the message *started* (its first history entry is the
  user message with that messageId) is the one. "Not there" needs every task that could be
  it (updated since the first attempt, less a clock skew allowance, or with no status
  timestamp at all) to show how it started (a user message first in its history), and a
  listing that works (it shows some task, honours its filter, and is read to its end).

Each look is made twice, a pause apart (the first attempt may still be landing). Anything
less than a proof is `Unresolved`, with why: a task without history or with trimmed history,
a sub-task holding the messageId without having been started by it, two tasks started by it,
a stub listing, a listing that stops early or is too large, an agent that answers messages
with a Message (which leaves nothing to find). Nothing is resent then (`OutcomeUnknown`).

The search is sans-IO. `find_sent` is a generator that yields `GetTaskQuery`,
`ListTasksQuery` and `Pause` and is sent their answers; `follow_task` waits for a task to
settle the same way. `reading` wraps either so that each query is an `Ask` whose failures are
judged (retried after a `Pause`, each retry paid for with a `Spend`) and every pause ends by
the deadline; `drive` and `adrive` carry the effects out with sync or async I/O. The doors
(the httpx transports, the a2a-sdk client) only say how to ask one query (`TaskReader`).
"""

from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar, runtime_checkable

from a2a_client_errors._operations import WORK_OPERATIONS

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Generator

    from a2a_client_errors._errors import CallError

__all__ = [
    "WORK_OPERATIONS",
    "AgentFacts",
    "Ask",
    "CardQuery",
    "Deduplicates",
    "ExactlyOnce",
    "Failed",
    "Found",
    "GetTaskQuery",
    "ListTasksQuery",
    "LookupResult",
    "NotFound",
    "Pause",
    "Query",
    "ReadFailedError",
    "Resolution",
    "SentMessage",
    "Spend",
    "TaskPage",
    "TaskReader",
    "TaskView",
    "Unresolved",
    "adrive",
    "card_says_deduplicates",
    "drive",
    "find_sent",
    "follow_task",
    "parse_timestamp",
    "reading",
]

R = TypeVar("R")


class Resolution(str, enum.Enum):
    """How an unknown outcome of a call that creates work was resolved."""

    FOUND = "found"
    """The task the first attempt made was found: it is the answer; nothing was resent."""
    RESENT = "resent"
    """Its absence was proven: the same message was sent again."""
    NOT_FOUND = "not_found"
    """Its absence was proven, and the call gave up (no attempt or time left)."""
    UNRESOLVED = "unresolved"
    """Neither found nor proven absent: nothing was resent (`OutcomeUnknown`)."""
    DEDUPLICATING = "deduplicating"
    """The peer deduplicates by messageId (declared, or advertised in its agent card):
    resent at once, without a look-up."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ExactlyOnce:
    """How a guarded call makes an unknown outcome known before it resends (see the module).

    Attributes:
        deduplicating: the peers (their keys, as the Guard names them) known to deduplicate by
            messageId, or a function of the peer's key saying whether it does. Their unknown
            outcomes are resent at once, as any other retry. (An agent whose card advertises
            the deduplication extension is known without being named here.)
        max_pages: the most ListTasks pages read per look; a listing that goes on is
            inconclusive.
        page_size: the tasks asked for per page (A2A allows 1 to 100).
        history_length: the most history entries asked for per listed task (A2A keeps the
            most recent ones). A task the message started has only a few entries when it is
            looked for, so a bound costs nothing in proof; None asks for the agent's default.
        max_bytes: the most bytes one look-up may read, every page together (an answer is
            never read past it: a look-up that would is inconclusive).
        recheck_after: seconds to wait before looking a second time (the first attempt may
            still be landing). 0 looks once.
        clock_skew: seconds taken off the time of the first attempt for the window of tasks
            that could be the one: a task whose status changed before is too old to be it.
        timeout: the longest one look-up may take, in seconds (under a deadline, at most the
            time left).
        reserve: the share of a call's deadline kept for the look-up: an attempt of a call
            that creates work may use the time left less this share of the deadline (all of
            it when less than twice that share is left), so that a lost answer can still be
            looked up in time.
        non_blocking: whether a unary SendMessage is sent without blocking (A2A 1.0
            ``returnImmediately``, 0.3 ``blocking: false``) and its task then waited for with
            reads, which are free to retry: True for every send, False never, None (the
            default) only to agents whose tasks cannot be looked up (no ListTasks, or not for
            this caller), where a lost answer could otherwise never be resolved.
        poll_initial: the first pause, in seconds, between two reads of a task waited for.
        poll_max: the longest pause between two reads (the pauses double up to it).
        wall_clock: the wall clock, in seconds since the epoch (``time.time``), for the
            window of candidate tasks.

    """

    deduplicating: Collection[str] | Callable[[str], bool] = ()
    max_pages: int = 5
    page_size: int = 50
    history_length: int | None = 20
    max_bytes: int = 1024 * 1024
    recheck_after: float = 0.5
    clock_skew: float = 300.0
    timeout: float = 10.0
    reserve: float = 0.2
    non_blocking: bool | None = None
    poll_initial: float = 0.5
    poll_max: float = 5.0
    wall_clock: Callable[[], float] = field(default=time.time, repr=False)

    def __post_init__(self) -> None:
        if self.max_pages < 1:
            msg = "max_pages must be at least 1"
            raise ValueError(msg)
        if not 1 <= self.page_size <= 100:
            msg = "page_size must be from 1 to 100 (the A2A limits of ListTasks)"
            raise ValueError(msg)
        if self.history_length is not None and self.history_length < 1:
            msg = "history_length must be at least 1 (or None)"
            raise ValueError(msg)
        if self.max_bytes < 1024:
            msg = "max_bytes must be at least 1024"
            raise ValueError(msg)
        if self.recheck_after < 0 or self.clock_skew < 0 or self.timeout <= 0:
            msg = "recheck_after and clock_skew must be >= 0, timeout > 0"
            raise ValueError(msg)
        if not 0 <= self.reserve < 1:
            msg = "reserve must be from 0 to less than 1 (a share of the deadline)"
            raise ValueError(msg)
        if not 0 < self.poll_initial <= self.poll_max:
            msg = "poll_initial must be > 0 and at most poll_max"
            raise ValueError(msg)

    def deduplicates(self, peer: str) -> bool:
        """Whether ``peer`` is declared to deduplicate resent messageIds."""
        declared = self.deduplicating
        if callable(declared):
            return bool(declared(peer))
        return peer in declared

    def attempt_time(self, left: float, limit: float | None) -> float:
        """The time an attempt of a call that creates work may use, of ``left`` seconds.

        Keeps ``reserve`` of the deadline (``limit`` seconds) for the look-up, unless less than
        twice that is left (then all of it: a look-up without an answer to look for is moot).
        """
        reserve = self.reserve * (limit or 0.0)
        return max(left - reserve if left > 2 * reserve else left, 0.0)


@dataclass(slots=True)
class AgentFacts:
    """What the doors have learnt of one agent from its answers and its card.

    Kept by the Guard per agent (`Guard.facts`: the interface a message goes to, as a
    `TaskReader` names it), forgotten when it goes idle. Each fact is learnt once and only
    ever turns True.

    Attributes:
        answers_with_messages: it answered a message with a Message, which leaves no task: a
            look-up that finds nothing then proves nothing.
        answers_with_tasks: it answered a message with a task.
        unlisted: its tasks cannot be listed for this caller (no ListTasks: A2A 0.3; refused:
            a store that lists only for an authenticated user), so a lost answer can only be
            found through a follow-up's task: sends to it go without blocking when
            `ExactlyOnce.non_blocking` is None.
        deduplicates: its agent card advertises the deduplication extension
            (`a2a_client_errors._dedupe_card`): a resend is safe.
        card_read: its card was read for that (once; again after the peer is forgotten).

    """

    answers_with_messages: bool = False
    answers_with_tasks: bool = False
    unlisted: bool = False
    deduplicates: bool = False
    card_read: bool = False


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
class TaskView:
    """What a look-up reads of a task, whatever the binding gave.

    Attributes:
        task_id: the task's id ("" when it has none).
        context_id: its contextId ("" when it has none).
        updated_at: its status timestamp, in seconds since the epoch; None when it has none
            (A2A makes it optional).
        history: its history as given, oldest first: each entry's messageId ("" when it has
            none) and whether it is the user's.
        settled: whether its state is terminal or interrupted (a blocking send returns then).

    """

    task_id: str = ""
    context_id: str = ""
    updated_at: float | None = None
    history: tuple[tuple[str, bool], ...] = ()
    settled: bool = False

    @property
    def shows_start(self) -> bool:
        """Whether the history starts with a user message: how the task started is visible."""
        return bool(self.history) and self.history[0][1]

    def started_by(self, message_id: str) -> bool:
        """Whether the task was started by the message (the first history entry, the user's)."""
        return self.shows_start and self.history[0][0] == message_id

    def holds(self, message_id: str) -> bool:
        """Whether any history entry has the messageId."""
        return any(entry[0] == message_id for entry in self.history)

    def holds_users(self, message_id: str) -> bool:
        """Whether a user message in the history has the messageId."""
        return any(entry == (message_id, True) for entry in self.history)


@dataclass(frozen=True, slots=True)
class GetTaskQuery:
    """Read one task, its whole history. Answer: the task, or None when the agent says no."""

    task_id: str


@dataclass(frozen=True, slots=True)
class ListTasksQuery:
    """List tasks, newest first, without artifacts. Answer: a `TaskPage`.

    Attributes:
        context_id: only the tasks of this context, if given.
        page_token: where the page starts ("" for the first).
        page_size: how many tasks to ask for.
        history_length: the most history entries per task (None: the agent's default).

    """

    context_id: str | None
    page_token: str
    page_size: int
    history_length: int | None = None


@dataclass(frozen=True, slots=True)
class CardQuery:
    """Read the agent's card. Answer: the card (as the binding gives it), or None."""


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before going on (the answer is ignored)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class TaskPage:
    """One page of ListTasks.

    Attributes:
        tasks: the tasks as the binding gave them.
        next_page_token: the next page's token ("" on the last page).
        total_size: the number of tasks the listing says it holds, when it says (else None).
        size: the bytes the page took on the wire (0 when unknown).

    """

    tasks: tuple[Any, ...]
    next_page_token: str = ""
    total_size: int | None = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class Found:
    """What the first attempt made.

    The task as the binding gave it (from `find_sent`), or the call's answer built from it
    (what a look-up hands the Guard).
    """

    value: Any


@dataclass(frozen=True, slots=True)
class NotFound:
    """Proven absent: a resend will not make a second task."""


@dataclass(frozen=True, slots=True)
class Deduplicates:
    """The agent's card advertises deduplication: a resend is safe without a look-up."""


@dataclass(frozen=True, slots=True)
class Unresolved:
    """Neither found nor proven absent: the outcome stays unknown; nothing is resent.

    Attributes:
        why: for humans: what stood in the way of a proof (never peer text).

    """

    why: str


LookupResult: TypeAlias = "Found | NotFound | Unresolved | Deduplicates"
Query: TypeAlias = "GetTaskQuery | ListTasksQuery | CardQuery | Pause"
NOT_FOUND: Final = NotFound()
NO_START_SHOWN: Final = Unresolved(
    "no listed task shows how it started (history without the user's message, or none): "
    "the agent keeps no record to find a task by"
)


class ReadFailedError(Exception):
    """A look-up's read whose answer does not say what the look-up asked.

    Attributes:
        error: the error the answer was, when it was one (the Guard retries the read when
            its policy retries that error); None for an answer of the wrong shape.

    """

    def __init__(self, why: str, error: CallError | None = None) -> None:
        super().__init__(why)
        self.error = error


@runtime_checkable
class TaskReader(Protocol):
    """How a door reads an agent's tasks for the Guard: one request per query, no retry.

    The Guard drives the search (`find_sent`, `follow_task`) through `reading`: it retries a
    query that failed as any read, pays for it from the peer's budget and ends by the
    deadline. A door says only how to ask.

    Attributes:
        sent: the message a look-up searches for.
        elsewhere: whether some answer came from another interface of the agent than the one
            the message was sent to (which may keep its own task store): then "not there" is
            not concluded.
        agent: the key what is learnt of the agent is kept under (`AgentFacts`): the interface
            the message went to, never less (two agents served on one host are two agents).

    """

    sent: SentMessage
    elsewhere: bool
    agent: str

    def view(self, task: Any) -> TaskView:
        """What the look-up reads of a task as the binding gave it."""
        ...

    def ask(self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None) -> Any:
        """Ask one query (or an awaitable of it, in async doors); raise what failed.

        A `CardQuery` is answered with the agent's card, or None when the door has none to
        read (then the agent is not known to deduplicate).
        """
        ...

    def found(self, task: Any) -> Any:
        """The call's answer, built from the task found (or an awaitable of it)."""
        ...


# --- the search ---------------------------------------------------------------------------------


def find_sent(
    sent: SentMessage,
    settings: ExactlyOnce,
    view: Callable[[Any], TaskView],
    *,
    answers_with_messages: bool = False,
) -> Generator[Query, Any, LookupResult]:
    """Look for the task that ``sent`` made: yields queries, returns what was found.

    Args:
        sent: the message to look for.
        settings: pages, bytes, the second look's pause, the clock skew.
        view: what the look-up reads of a task as the binding gives it.
        answers_with_messages: whether the agent is known to answer messages with a Message:
            then nothing found proves nothing.

    """
    looks = 2 if settings.recheck_after > 0 else 1
    doubt = ""
    for look in range(looks):
        if look:
            yield Pause(settings.recheck_after)
        if sent.task_id:
            result = yield from _look_in_task(sent, view)
        else:
            result = yield from _look_in_listing(sent, settings, view)
        if isinstance(result, Found) or result is NO_START_SHOWN:
            return result  # an agent that shows no start will not show one a pause later
        if isinstance(result, Unresolved):
            doubt = doubt or result.why
    if doubt:
        return Unresolved(doubt)
    if answers_with_messages:
        return Unresolved("the agent answers messages with a Message, which leaves nothing to find")
    return NOT_FOUND


def _look_in_task(
    sent: SentMessage, view: Callable[[Any], TaskView]
) -> Generator[Query, Any, LookupResult]:
    """One look at a follow-up's task: the messageId in its history, or proof it is not."""
    assert sent.task_id is not None  # noqa: S101 (a follow-up)
    task = yield GetTaskQuery(sent.task_id)
    if task is None:
        return NOT_FOUND  # the agent says the task is not there: nothing was added to it
    seen = view(task)
    if seen.holds_users(sent.message_id):
        return Found(task)
    if not seen.shows_start:
        return Unresolved("the task's history does not go back to its start (trimmed or absent)")
    return NOT_FOUND


def _look_in_listing(
    sent: SentMessage, settings: ExactlyOnce, view: Callable[[Any], TaskView]
) -> Generator[Query, Any, LookupResult]:
    """One look through the listing, to its end: the task the message started, or a proof."""
    mid = sent.message_id
    since = None if sent.sent_at is None else sent.sent_at - settings.clock_skew
    started: list[Any] = []
    holding = blind = listed = read = shown = 0
    token = ""
    for _ in range(settings.max_pages):
        page = yield ListTasksQuery(
            sent.context_id, token, settings.page_size, settings.history_length
        )
        read += page.size
        for task in page.tasks:
            listed += 1
            seen = view(task)
            shown += seen.shows_start
            if sent.context_id and seen.context_id and seen.context_id != sent.context_id:
                return Unresolved("the listing does not keep to the contextId it was asked for")
            if seen.started_by(mid):
                started.append(task)  # whatever its timestamp says: clocks differ
            elif since is not None and seen.updated_at is not None and seen.updated_at < since:
                continue  # its status changed before the message was sent: not the one
            elif seen.holds(mid):
                holding += 1
            elif not seen.shows_start:
                blind += 1
        if len(started) > 1:
            return Unresolved("more than one task was started by this messageId")
        if started:
            return Found(started[0])
        if listed >= settings.page_size and not shown:
            return NO_START_SHOWN  # a page without one user's message first: none will have
        if read > settings.max_bytes:
            return Unresolved(f"the listing is larger than {settings.max_bytes} bytes")
        token = page.next_page_token
        if not token:
            if page.total_size is not None and page.total_size > listed:
                return Unresolved("the listing ended before the tasks it counts")
            break
    else:
        return Unresolved(f"more than {settings.max_pages} pages of tasks to search")
    if holding:
        return Unresolved("a task holds the messageId without having been started by it")
    if blind:
        return Unresolved(
            f"{blind} task(s) that could be the one do not show how they started "
            "(no history, or history without the user's message)"
        )
    if listed:
        return NOT_FOUND
    if sent.context_id:
        # An empty context may be new; a listing that shows nothing anywhere proves nothing.
        control = yield ListTasksQuery(None, "", 1, 1)
        if control.tasks:
            return NOT_FOUND
    return Unresolved("the agent lists no task at all (an empty listing proves nothing)")


def card_says_deduplicates() -> Generator[Query, Any, bool]:
    """Read the agent's card: whether it advertises deduplication (a resend is then safe)."""
    from a2a_client_errors._dedupe_card import read_dedupe_params  # noqa: PLC0415 (small, pure)

    card = yield CardQuery()
    return card is not None and read_dedupe_params(card) is not None


def follow_task(
    task: Any, settings: ExactlyOnce, view: Callable[[Any], TaskView]
) -> Generator[Query, Any, Any]:
    """Wait until ``task`` settles (terminal or interrupted) with GetTask; returns the task.

    Reads with pauses from ``poll_initial`` doubling up to ``poll_max``; a task the agent no
    longer knows ends the wait with the last one read. The deadline, carried by `reading`,
    ends it too.
    """
    pause = settings.poll_initial
    seen = view(task)
    while not seen.settled and seen.task_id:
        yield Pause(pause)
        pause = min(pause * 2, settings.poll_max)
        latest = yield GetTaskQuery(seen.task_id)
        if latest is None:
            break
        task, seen = latest, view(latest)
    return task


# --- reads that retry -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask a query of the agent, in at most ``timeout`` seconds (None: no bound).

    The answer is the query's answer, or `Failed` holding what the asking raised.
    """

    query: GetTaskQuery | ListTasksQuery | CardQuery
    timeout: float | None


@dataclass(frozen=True, slots=True)
class Failed:
    """What asking a query raised (sent back to `reading` in place of an answer)."""

    exc: Exception


@dataclass(frozen=True, slots=True)
class Spend:
    """Take one retry token from the peer's budget. Answer: whether one was taken."""


Effect: TypeAlias = "Ask | Pause | Spend"
Judge: TypeAlias = (
    "Callable[[GetTaskQuery | ListTasksQuery | CardQuery, Exception, int], float | str]"
)
"""Given a query, what asking it raised and how many times it was asked: the seconds to wait
before asking again, or why not (a str: the search ends `Unresolved` with it)."""


def reading(
    search: Generator[Query, Any, R],
    judge: Judge,
    *,
    clock: Callable[[], float],
    deadline_at: float | None,
) -> Generator[Effect, Any, R | Unresolved]:
    """``search`` with each query asked as a read: failures judged, retried, paid for.

    A failure ``judge`` gives a delay for is asked again after that pause, once a `Spend`
    was granted; otherwise the search ends `Unresolved` with the judge's words. No pause
    crosses ``deadline_at``: one that would ends the search `Unresolved`.
    """
    try:
        query = next(search)
        while True:
            if isinstance(query, Pause):
                if not _fits(query.seconds, clock, deadline_at):
                    return Unresolved("the deadline came before the look-up ended")
                yield query
                query = search.send(None)
                continue
            asked = 0
            while True:
                asked += 1
                left = None if deadline_at is None else deadline_at - clock()
                if left is not None and left <= 0:
                    return Unresolved("the deadline came before the look-up ended")
                answer = yield Ask(query, left)
                if not isinstance(answer, Failed):
                    break
                verdict = judge(query, answer.exc, asked)
                if isinstance(verdict, str):
                    return Unresolved(verdict)
                if not _fits(verdict, clock, deadline_at):
                    return Unresolved("the deadline came before the look-up's read was retried")
                if not (yield Spend()):
                    return Unresolved("the retry budget is spent: the look-up's read failed")
                yield Pause(verdict)
            query = search.send(answer)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        search.close()


def _fits(seconds: float, clock: Callable[[], float], deadline_at: float | None) -> bool:
    return deadline_at is None or clock() + seconds < deadline_at


def drive(
    effects: Generator[Effect, Any, R],
    ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
    sleep: Callable[[float], object],
    spend: Callable[[], bool],
) -> R:
    """Carry out `reading`'s effects with sync I/O; returns what the search returns."""
    try:
        effect = next(effects)
        while True:
            reply: Any
            if isinstance(effect, Ask):
                try:
                    reply = ask(effect.query, effect.timeout)
                except Exception as exc:  # judged by the search: retried, or the end
                    reply = Failed(exc)
            elif isinstance(effect, Pause):
                reply = sleep(effect.seconds)
            else:
                reply = spend()
            effect = effects.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(
    effects: Generator[Effect, Any, R],
    ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
    sleep: Callable[[float], Any],
    spend: Callable[[], Any],
) -> R:
    """`drive`, awaiting ``ask``, ``sleep`` and ``spend`` when they return awaitables."""
    try:
        effect = next(effects)
        while True:
            reply: Any
            try:
                if isinstance(effect, Ask):
                    reply = ask(effect.query, effect.timeout)
                elif isinstance(effect, Pause):
                    reply = sleep(effect.seconds)
                else:
                    reply = spend()
                if hasattr(reply, "__await__"):
                    reply = await reply
            except Exception as exc:
                if not isinstance(effect, Ask):
                    raise
                reply = Failed(exc)  # judged by the search: retried, or the end
            effect = effects.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


# --- timestamps -----------------------------------------------------------------------------------

_TIMESTAMP: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,12}))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?"
)


def parse_timestamp(text: object) -> float | None:
    """An RFC 3339 timestamp (as ProtoJSON and 0.3 write it) in seconds since the epoch.

    None for anything else; never raises. A timestamp without an offset is read as UTC.
    """
    if not isinstance(text, str) or len(text) > 64:
        return None
    match = _TIMESTAMP.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        offset = timedelta(0)
        if sign is not None and zulu is None:
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            offset = -offset if sign == "-" else offset
        moment = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            min(int(second), 59),  # a leap second reads as the second before it
            tzinfo=timezone(offset),
        )
    except (ValueError, OverflowError):
        return None
    seconds = moment.timestamp()
    if fraction:
        seconds += int(fraction) / 10 ** len(fraction)
    return seconds

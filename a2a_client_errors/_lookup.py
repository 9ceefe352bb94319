"""Finding what an attempt with an unknown outcome made, before anything is sent again.

A SendMessage whose answer was lost may have made a task: no official A2A server
deduplicates by messageId, so resending it blindly makes a second one. And no snapshot of an
agent proves that a message made nothing: the agent may still be working (a task recorded
only when its work ends), may have rewritten its history, may page unstably, may keep no
history at all. So the look-up *finds*; it never concludes absence on its own:

* a follow-up (the message names a ``taskId``): ``GetTask`` of that task; found when the
  messageId is in its history as the user's;
* a new task: ``ListTasks`` (by the message's ``contextId`` when it has one), artifacts left
  out, history bounded, pages sized to the bytes left (the first page one task: the newest,
  which the lost send just made). The task the message *started* (its first history entry is
  the user message with that messageId) is the one; in a context made new for the message
  (its ``contextId`` is its ``messageId``), the one task of that context is, history or not.

The search looks again and again, pauses from ``recheck_after`` doubling up to ``poll_max``,
until it finds the task, the call's deadline ends, or ``max_looks`` looks were made: then it
is `Unresolved`, saying why, and nothing is resent (`OutcomeUnknown`). A look that shows
absence, read to its end, is `NotFound` only for an agent the caller declared a listing
contract for (`ExactlyOnce.listed_within`: it lists each task with its user message within
N seconds of receiving it), once N seconds have passed since the answer was lost.

The search is sans-IO. `find_sent` is a generator that yields `GetTaskQuery`,
`ListTasksQuery` and `Pause` and is sent their answers (a pause: whether it was taken; a
query: its answer, or `Unanswered`); `follow_task` waits for a task to settle the same way.
`reading` wraps either so that each query is an `Ask` whose failures are judged (retried
after a `Sleep`), a look-up's reads made only while the peer's look-up allowance is open
(`MayRead`), each read the agent leaves unanswered charged to it (`Charge`), and every pause
ends by the deadline. These are effects of the one machine (`a2a_client_errors._effects`):
the call engine's drivers carry them out, within a call or for a door's wait. The doors only
say how to ask one query: in one call (`TaskReader`: the a2a-sdk client's), or as steps that
yield each request as an `Exchange` for the one sender the door gives (`ReadSteps`: the httpx
transports', one reader for the sync and the async door).
"""

from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import GeneratorType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar, runtime_checkable

from a2a_client_errors._dedupe_card import read_dedupe_mark, read_dedupe_params
from a2a_client_errors._effects import CHARGE, MAY_READ, Ask, Charge, Failed, MayRead, Sleep
from a2a_client_errors._operations import WORK_OPERATIONS

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Generator, Mapping

    from a2a_client_errors._dedupe_card import DedupeParams
    from a2a_client_errors._effects import Effect as MachineEffect
    from a2a_client_errors._errors import CallError

__all__ = [
    "ANOTHER_TASK",
    "DEDUPE_MARGIN",
    "READERS",
    "WORK_OPERATIONS",
    "AgentFacts",
    "AnswerTooLargeError",
    "Ask",
    "CardQuery",
    "Charge",
    "Deduplicates",
    "ExactlyOnce",
    "Failed",
    "Found",
    "GetTaskQuery",
    "ListTasksQuery",
    "LookupAllowance",
    "LookupResult",
    "MayRead",
    "NotFound",
    "Pause",
    "Query",
    "ReadFailedError",
    "ReadSteps",
    "Resolution",
    "SentMessage",
    "TaskPage",
    "TaskReader",
    "TaskView",
    "Unanswered",
    "Unresolved",
    "card_dedupe",
    "find_sent",
    "follow_task",
    "learn_mark",
    "own_context",
    "parse_timestamp",
    "reading",
    "same_task",
    "stepwise",
    "within_ttl",
]

R = TypeVar("R")


class Resolution(str, enum.Enum):
    """How an unknown outcome of a call that creates work was resolved."""

    FOUND = "found"
    """The task the first attempt made was found: it is the answer; nothing was resent."""
    RESENT = "resent"
    """Absent by the caller's listing contract (`ExactlyOnce.listed_within`): sent again (told
    as the resend goes out)."""
    NOT_FOUND = "not_found"
    """Absent by the caller's listing contract, and the call gave up before a resend went out
    (no attempt left, no time left, the breaker open)."""
    UNRESOLVED = "unresolved"
    """Not found by the end of the look-up: nothing was resent (`OutcomeUnknown`)."""
    DEDUPLICATING = "deduplicating"
    """The peer deduplicates by messageId (declared, or advertised in its agent card and
    confirmed by its answers, the resend inside the advertised ttl): resent at once."""

    def __str__(self) -> str:
        return self.value


def _per_peer(
    declared: Mapping[str, float] | Callable[[str], float | None] | None, peer: str
) -> float | None:
    if declared is None:
        return None
    if callable(declared):
        return declared(peer)
    return declared.get(peer)


@dataclass(frozen=True, slots=True)
class ExactlyOnce:
    """How a guarded call makes an unknown outcome known, and when it may resend (see the module).

    After an unknown outcome of a call that creates work, the same message is sent again only
    when the agent's word covers the resend: it is declared to deduplicate
    (``deduplicating``), or its card advertises deduplication, its answers carry the mark of
    it, and the resend falls inside the advertised ttl; or the caller declared a listing
    contract for it (``listed_within``) and a look read to its end shows the task absent once
    that time has passed. Otherwise the task is looked for until found or the deadline, then
    `OutcomeUnknown`.

    Attributes:
        deduplicating: the peers (their keys, as the Guard names them) known to deduplicate by
            messageId, or a function of the peer's key saying whether it does. Their unknown
            outcomes are resent at once, as any other retry, whenever they happen.
        listed_within: per peer key (a mapping, or a function of the key giving None for no
            contract), the seconds within which the agent lists each task it received, with
            the user's message first in its history: "this agent shows each task within N
            seconds of receiving it". Only for such a peer, and only once N seconds have
            passed since the answer was lost, does a look that read the listing to its end
            and found nothing allow a resend. Declare it only where the agent's code
            promises it.
        max_pages: the most ListTasks pages read per look.
        page_size: the most tasks asked for per page (A2A allows 1 to 100). The first page
            asks for one (the newest task, which a lost send just made), the next ones as
            many as the bytes left are likely to hold.
        history_length: the most history entries asked for per listed task (A2A keeps the
            most recent ones). A task the message started has only a few entries when it is
            looked for; None asks for the agent's default.
        max_bytes: the most bytes one look through the listing may read, its pages together:
            a page is never read past the bytes left, whatever the agent does with
            ``includeArtifacts`` and ``historyLength``.
        recheck_after: seconds before the second look; the pauses double up to ``poll_max``.
            0 looks again at once.
        max_looks: the most looks one look-up makes (however much time is left).
        clock_skew: seconds taken off the time of the first attempt for the window of tasks
            that could be the one, under a listing contract: a task whose status changed before
            is too old to be it. Timestamps without an offset never count.
        timeout: the longest a look-up (or a wait for a task) may take, in seconds, when the
            call has no deadline; under a deadline, it may take all the time left.
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
        poll_max: the longest pause between two reads or two looks (the pauses double up to
            it).
        allowance: the reads a peer's look-ups may leave unanswered before they are rationed:
            a read the agent answers gives its share back, so look-ups of an agent that
            answers them are never rationed, while an outage costs at most
            ``allowance_per_call`` reads per call once it is spent.
        allowance_per_call: the share of a read each look-up adds to its peer's allowance.
        wall_clock: the wall clock, in seconds since the epoch (``time.time``), for the
            record of when a message was sent.

    """

    deduplicating: Collection[str] | Callable[[str], bool] = ()
    listed_within: Mapping[str, float] | Callable[[str], float | None] | None = None
    max_pages: int = 10
    page_size: int = 50
    history_length: int | None = 20
    max_bytes: int = 64 * 1024
    recheck_after: float = 0.5
    max_looks: int = 16
    clock_skew: float = 300.0
    timeout: float = 30.0
    reserve: float = 0.2
    non_blocking: bool | None = None
    poll_initial: float = 0.5
    poll_max: float = 5.0
    allowance: float = 10.0
    allowance_per_call: float = 0.1
    wall_clock: Callable[[], float] = field(default=time.time, repr=False)

    def __post_init__(self) -> None:
        if self.max_pages < 1 or self.max_looks < 1:
            msg = "max_pages and max_looks must be at least 1"
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
        if self.allowance < 1 or not 0 <= self.allowance_per_call <= 1:
            msg = "allowance must be at least 1, allowance_per_call from 0 to 1"
            raise ValueError(msg)

    def deduplicates(self, peer: str) -> bool:
        """Whether ``peer`` is declared to deduplicate resent messageIds."""
        declared = self.deduplicating
        if callable(declared):
            return bool(declared(peer))
        return peer in declared

    def listing_contract(self, peer: str) -> float | None:
        """The seconds within which ``peer`` is declared to list each task, or None."""
        seconds = _per_peer(self.listed_within, peer)
        if seconds is None or isinstance(seconds, bool) or not seconds >= 0:
            return None  # NaN and nonsense declare nothing
        return float(seconds)

    def attempt_time(self, left: float, limit: float | None) -> float:
        """The time an attempt of a call that creates work may use, of ``left`` seconds.

        Keeps ``reserve`` of the deadline (``limit`` seconds) for the look-up, unless less than
        twice that is left (then all of it: a look-up without an answer to look for is moot).
        """
        reserve = self.reserve * (limit or 0.0)
        return max(left - reserve if left > 2 * reserve else left, 0.0)


DEDUPE_MARGIN: Final = 0.1
"""The share of an advertised dedupe ttl a resend keeps clear of (at least 1 s): a resend
must reach the agent before its record may go."""


def within_ttl(elapsed: float, ttl: float) -> bool:
    """Whether a resend ``elapsed`` seconds after the first send falls inside ``ttl``."""
    return elapsed < ttl - max(1.0, DEDUPE_MARGIN * ttl)


@dataclass(slots=True)
class AgentFacts:
    """What the doors have learnt of one agent from its answers and its card.

    Kept by the Guard per agent (`Guard.facts`: the interface a message goes to, as a
    `TaskReader` names it), forgotten when it goes idle. The flags are learnt once and only
    ever turn True.

    Attributes:
        answers_with_messages: it answered a message with a Message, which leaves no task.
        answers_with_tasks: it answered a message with a task.
        unlisted: its tasks cannot be listed for this caller (no ListTasks: A2A 0.3; refused:
            a store that lists only for an authenticated user), so a lost answer can only be
            found through a follow-up's task: sends to it go without blocking when
            `ExactlyOnce.non_blocking` is None.
        deduplicates: its agent card advertises the deduplication extension
            (`a2a_client_errors._dedupe_card`), with ``dedupe_ttl``.
        dedupe_ttl: the ttl the card advertises, in seconds (None: none advertised).
        dedupe_confirmed: an answer of the agent to a send carried the extension's mark: the
            agent itself deduplicates, not only a card that may be stale.
        card_read: its card was read for that (once; again after the peer is forgotten).

    """

    answers_with_messages: bool = False
    answers_with_tasks: bool = False
    unlisted: bool = False
    deduplicates: bool = False
    dedupe_ttl: float | None = None
    dedupe_confirmed: bool = False
    card_read: bool = False

    def dedupe_covers(self, elapsed: float) -> bool:
        """Whether the agent's own deduplication covers a resend ``elapsed`` s after the send."""
        ttl = self.dedupe_ttl
        return (self.deduplicates and self.dedupe_confirmed and ttl is not None) and within_ttl(
            elapsed, ttl
        )


def learn_mark(facts: AgentFacts, answer: object) -> None:
    """Learn from a send's answer whether it carries the deduplication mark (never raises).

    The mark (`a2a_client_errors._dedupe_card.read_dedupe_mark`) is the agent's own word
    that it deduplicated this message: it confirms a card's claim, and its ttl bounds it.
    """
    mark = read_dedupe_mark(answer)
    if mark is None:
        return
    facts.dedupe_confirmed = True
    facts.deduplicates = True
    ttl = facts.dedupe_ttl
    facts.dedupe_ttl = mark.ttl if ttl is None else min(ttl, mark.ttl)


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
        max_bytes: the most bytes the answer may take (None: the door's own bound): a door
            reads no further, and an answer that would take more fails the read.

    """

    context_id: str | None
    page_token: str
    page_size: int
    history_length: int | None = None
    max_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class CardQuery:
    """Read the agent's card. Answer: the card (as the binding gives it), or None."""


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before going on. Answer: whether it was taken (False: no time left)."""

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
    """Absent on the caller's word (a listing contract, a look-up of its own): resend it."""


@dataclass(frozen=True, slots=True)
class Deduplicates:
    """The agent deduplicates (its card, confirmed by its answers): resent without a search."""


@dataclass(frozen=True, slots=True)
class Unresolved:
    """Not found, and no word of the agent allows a resend: the outcome stays unknown.

    Attributes:
        why: for humans: why the task was not found (never peer text).

    """

    why: str


@dataclass(frozen=True, slots=True)
class Unanswered:
    """A query the agent did not answer as asked, sent to the search in place of its answer.

    Attributes:
        why: for humans: what failed (never peer text).
        final: whether asking again cannot help (the agent refused: no such method, not
            authorised, the look-up's allowance spent); else the read's retries or time ran
            out, and a later look may be answered.

    """

    why: str
    final: bool = False


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


class AnswerTooLargeError(ReadFailedError):
    """A look-up's answer larger than the bytes it may take: not read, nothing told from it.

    Asking again cannot help within the same look; a later look, with its own bytes, may.
    """


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


@runtime_checkable
class ReadSteps(Protocol):
    """A `TaskReader` whose reads are sans-IO steps: the door gives one sender, never a driver.

    Where a `TaskReader` asks a query in one call, a door's ``asking`` is a generator that
    yields the door's own needs as `Exchange` effects (each carried out by the sender the door
    put on it) and returns the answer; the engine's drivers carry those out beside every other
    effect of the call, so a door that holds them writes no loop, sync or async, of its own.
    ``sent``, ``elsewhere``, ``agent`` and ``view`` are a `TaskReader`'s.
    """

    sent: SentMessage
    elsewhere: bool
    agent: str

    def view(self, task: Any) -> TaskView:
        """What the look-up reads of a task as the binding gave it."""
        ...

    def asking(
        self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None
    ) -> Generator[Effect, Any, Any]:
        """The steps of one query's read: its answer, or what failed raised (as `ask`)."""
        ...

    def finding(self, task: Any) -> Generator[Effect, Any, Any]:
        """The steps that build the call's answer from the task found (as `found`)."""
        ...


READERS: Final = (TaskReader, ReadSteps)
"""What reads an agent's tasks for the Guard (``isinstance(lookup, READERS)``): a door's
`TaskReader`, whose ``ask`` is one call, or its `ReadSteps`, whose reads are effects."""


# --- the search ---------------------------------------------------------------------------------

_Look: TypeAlias = "tuple[Found | NotFound | Unresolved, bool]"
"""One look's result, and whether looking again cannot help (the look-up ends with it)."""


def own_context(sent: SentMessage) -> bool:
    """Whether ``sent`` went in a context made new for it: its contextId is its messageId.

    Such a context holds only what this message made, so its one task is the message's task,
    whatever its history shows (an agent that keeps no history, or rewrites it).
    """
    return bool(sent.context_id) and sent.context_id == sent.message_id


def find_sent(
    sent: SentMessage,
    settings: ExactlyOnce,
    view: Callable[[Any], TaskView],
    *,
    answers_with_messages: bool = False,
    listed_within: float | None = None,
    since_lost: Callable[[], float] | None = None,
) -> Generator[Query, Any, LookupResult]:
    """Look for the task that ``sent`` made, again and again: yields queries, returns the end.

    `Found` as soon as a look finds it. `NotFound` only under a listing contract: a look that
    read the listing to its end shows the task absent, ``listed_within`` seconds or more after
    the answer was lost (``since_lost()``). Otherwise `Unresolved` once the pauses find no
    more time (the deadline), ``max_looks`` looks were made, or a look showed that looking
    again cannot help (the agent refuses the reads, or keeps no record to find a task by).

    Args:
        sent: the message to look for.
        settings: pages, bytes, pauses, looks, the clock skew.
        view: what the look-up reads of a task as the binding gives it.
        answers_with_messages: whether the agent is known to answer messages with a Message
            (which leaves nothing to find): then absence proves nothing, contract or not.
        listed_within: the agent's listing contract, in seconds (None: none declared).
        since_lost: seconds since the attempt's answer was lost, by the Guard's clock (needed
            with ``listed_within``).

    """
    own = own_context(sent)
    pause = settings.recheck_after
    doubt = ""
    looks = 0
    cursor = _Cursor()
    while True:
        looks += 1
        result, final = yield from _look(sent, settings, view, own, cursor)
        if isinstance(result, Found):
            return result
        wait = pause
        if isinstance(result, NotFound):
            doubt, until = _absent(doubt, pause, listed_within, answers_with_messages, since_lost)
            if until is None:
                return NOT_FOUND
            wait = until
        else:
            doubt = result.why
            if final:
                return Unresolved(doubt)
        if looks >= settings.max_looks:
            return Unresolved(_not_found(looks, doubt, "the most looks were made"))
        if not (yield Pause(wait)):
            return Unresolved(_not_found(looks, doubt, "the deadline came"))
        pause = min(pause * 2, settings.poll_max)


def _look(
    sent: SentMessage,
    settings: ExactlyOnce,
    view: Callable[[Any], TaskView],
    own: bool,
    cursor: _Cursor,
) -> Generator[Query, Any, _Look]:
    """One look: in a follow-up's task, or through the listing for a new task."""
    if sent.task_id:
        return (yield from _look_in_task(sent, view))
    return (yield from _look_in_listing(sent, settings, view, own, cursor))


def _absent(
    doubt: str,
    pause: float,
    listed_within: float | None,
    answers_with_messages: bool,
    since_lost: Callable[[], float] | None,
) -> tuple[str, float | None]:
    """What a look that shows the task absent leaves: the doubt, and the pause before the next.

    The pause is None when the listing contract (``listed_within`` seconds, counted by
    ``since_lost``) has run out: the absence stands, and the message may be resent. Before
    then the next look comes no later than the contract's end, and the doubt stays as it was.
    """
    if listed_within is None:
        return "", pause  # absent for now: the agent may record its task later
    if answers_with_messages:
        return _MESSAGES, pause
    waited = 0.0 if since_lost is None else since_lost()
    if waited >= listed_within:
        return doubt, None
    return doubt, min(pause, listed_within - waited)


_TWO_STARTED: Final = Unresolved("more than one task was started by this messageId")
_RESUMED: Final = Unresolved(
    "the rest of the listing, from where the last look stopped, does not hold it"
)
_TRIMMED: Final = Unresolved("the task's history does not go back to its start (trimmed or absent)")
ANOTHER_TASK: Final = Unresolved("GetTask answered another task than the one asked for")
_MESSAGES: Final = "the agent answers messages with a Message, which leaves nothing to find"


def _not_found(looks: int, doubt: str, end: str) -> str:
    """Why a look-up ended without the task: for humans, never peer text."""
    why = (
        f"the task was not found in {looks} look{'s' if looks > 1 else ''} ({end}); "
        "no listing proves that a message made nothing, so nothing was resent"
    )
    return f"{why}; the last look: {doubt}" if doubt else why


def _look_in_task(
    sent: SentMessage, view: Callable[[Any], TaskView]
) -> Generator[Query, Any, _Look]:
    """One look at a follow-up's task: the messageId in its history, or its absence there."""
    assert sent.task_id is not None  # noqa: S101 (a follow-up)
    task = yield GetTaskQuery(sent.task_id)
    if isinstance(task, Unanswered):
        return Unresolved(task.why), task.final
    if task is None:
        return NOT_FOUND, False  # the agent says the task is not there: nothing added, yet
    seen = same_task(task, sent.task_id, view)
    if seen is None:
        return ANOTHER_TASK, False
    if seen.holds_users(sent.message_id):
        return Found(task), False
    if not seen.shows_start:
        return Unresolved(
            "the task's history does not go back to its start (trimmed or absent)"
        ), False
    return NOT_FOUND, False


@dataclass(slots=True)
class _Cursor:
    """Where the next look through the listing starts, and what a task was seen to weigh.

    A look that stops on its bounds (bytes, pages) leaves its page token here: the next look
    goes on from there (tasks updated since are above it, the task looked for sinks below),
    and back to the top once a look read the listing to its end.
    """

    token: str = ""
    per_task: int = 0


@dataclass(slots=True)
class _Walk:
    """One look's way down the listing: the page it asks for next and the bytes read so far."""

    settings: ExactlyOnce
    resumed: str
    """The page token the look started from ("" for the top of the listing)."""
    token: str
    """The page token of the next page ("" on the first page from the top, or past the last)."""
    size: int
    """The tasks the next page asks for."""
    read: int = 0
    """The bytes the pages read so far took."""
    full: bool = False
    """Whether the bytes left hold no more task, at the size the tasks read so far took."""
    checked: bool = False
    """Whether the pages after the one the message's task was seen on were read too."""

    @classmethod
    def start(cls, settings: ExactlyOnce, cursor: _Cursor) -> _Walk:
        """A walk from where the last look stopped; from the top, the first page one task."""
        resumed = cursor.token
        size = _page_size(settings, settings.max_bytes, cursor.per_task) if resumed else 1
        return cls(settings, resumed, resumed, size)

    @property
    def left(self) -> int:
        """The bytes the look may still read."""
        return self.settings.max_bytes - self.read

    def query(self, sent: SentMessage) -> ListTasksQuery:
        """The next page to ask for."""
        history = self.settings.history_length
        return ListTasksQuery(sent.context_id, self.token, self.size, history, self.left)

    def advance(self, page: TaskPage, listed: int, cursor: _Cursor) -> None:
        """Go past ``page``: its token, what a task was seen to weigh, the next page's size."""
        self.token = page.next_page_token
        per_task = cursor.per_task = max(self.read // max(listed, 1), 1)
        self.size = _page_size(self.settings, self.left, per_task)
        self.full = self.left < 2 * per_task  # no room for one more task


def _look_in_listing(
    sent: SentMessage,
    settings: ExactlyOnce,
    view: Callable[[Any], TaskView],
    own: bool,
    cursor: _Cursor,
) -> Generator[Query, Any, _Look]:
    """One look through the listing: the task the message started, or absence, or no word.

    Pages are sized to the bytes left: the first look's first page asks for one task (the
    newest: a lost send just made it), the next as many as half the bytes left are likely to
    hold at the size the tasks read so far took, so that no page is read past ``max_bytes``.
    A look that starts where the previous one stopped can find the task, never prove it absent.
    """
    seen_so_far = _Tally(sent, settings, own)
    started = seen_so_far.started
    walk = _Walk.start(settings, cursor)
    for _ in range(settings.max_pages):
        page = yield walk.query(sent)
        if isinstance(page, Unanswered):
            if started:
                return Found(started[0]), False  # its neighbours could not be read: it stands
            return Unresolved(page.why), page.final
        walk.read += page.size
        for task in page.tasks:
            seen_so_far.add(task, view(task))
        stop = seen_so_far.hopeless()
        if stop is not None:
            return stop
        walk.advance(page, seen_so_far.listed, cursor)
        if started:
            if walk.checked or not walk.token or walk.full:
                return (yield from _confirmed(sent, settings, view, started[0], walk.left))
            walk.checked = True  # read its neighbours too: a second task started by it is no answer
            continue
        if not walk.token:
            cursor.token = ""
            return (yield from _read_to_the_end(sent, seen_so_far, walk, page.total_size))
        if walk.full:
            cursor.token = walk.token  # the next look goes on from here
            return Unresolved(f"the listing is larger than {settings.max_bytes} bytes"), False
    if started:
        return Found(started[0]), False
    cursor.token = walk.token
    return Unresolved(f"more than {settings.max_pages} pages of tasks to search"), False


def _read_to_the_end(
    sent: SentMessage, seen_so_far: _Tally, walk: _Walk, total_size: int | None
) -> Generator[Query, Any, _Look]:
    """What a look that read the listing to its end, no task started by the message, says.

    ``total_size`` is the count of tasks the last page says the listing holds (None: none).
    """
    listed = seen_so_far.listed
    if total_size is not None and total_size > listed and not walk.resumed:
        return Unresolved("the listing ended before the tasks it counts"), False
    verdict = seen_so_far.verdict()
    if verdict is not None:
        return verdict
    if walk.resumed:
        return _RESUMED, False
    if listed:
        return NOT_FOUND, False
    if sent.context_id:
        # An empty context may be new; a listing that shows nothing anywhere proves nothing.
        control = yield ListTasksQuery(None, "", 1, 1, walk.left)
        if isinstance(control, TaskPage) and control.tasks:
            return NOT_FOUND, False
    return Unresolved("the agent lists no task at all (an empty listing proves nothing)"), False


def _confirmed(
    sent: SentMessage, settings: ExactlyOnce, view: Callable[[Any], TaskView], task: Any, left: int
) -> Generator[Query, Any, _Look]:
    """A task the message started, checked against the rest of its context.

    A listing ordered by update can move a second task started by the same messageId (a
    sub-task echoing the user's message first) past the pages read. The task's context holds
    both: listed, it shows whether the message started one task there or more (then it is
    no answer). A context that cannot be read leaves the task standing, as its neighbours do.
    """
    seen = view(task)
    if sent.context_id or not seen.context_id or left <= 0:
        return Found(task), False  # the look kept to the message's context already
    page = yield ListTasksQuery(
        seen.context_id, "", settings.page_size, settings.history_length, left
    )
    if not isinstance(page, TaskPage):
        return Found(task), False
    others = {
        found.task_id
        for found in map(view, page.tasks)
        if found.started_by(sent.message_id) and found.task_id != seen.task_id
    }
    if others:
        return _TWO_STARTED, True
    return Found(task), False


def _page_size(settings: ExactlyOnce, left: int, per_task: int) -> int:
    """Tasks to ask for: as many as half of ``left`` bytes hold, from 1 to ``page_size``."""
    return max(1, min(settings.page_size, left // (2 * max(per_task, 1))))


@dataclass(slots=True)
class _Tally:
    """What one look saw of the listing's tasks, for the message it looks for."""

    sent: SentMessage
    settings: ExactlyOnce
    own: bool
    started: list[Any] = field(default_factory=list)
    in_context: list[Any] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    holding: int = 0
    blind: int = 0
    listed: int = 0
    shown: int = 0
    foreign: int = 0

    def add(self, task: Any, seen: TaskView) -> None:
        """Count one listed task (``seen``: what the look-up reads of it)."""
        sent = self.sent
        mid = sent.message_id
        if seen.task_id:
            if seen.task_id in self.ids:
                return  # listed again (a listing that pages unstably): counted once
            self.ids.add(seen.task_id)
        self.listed += 1
        self.shown += seen.shows_start
        if sent.context_id and seen.context_id and seen.context_id != sent.context_id:
            self.foreign += 1  # the listing does not keep to its filter: this one is not it
            if seen.started_by(mid):
                self.started.append(task)
            return
        since = None if sent.sent_at is None else sent.sent_at - self.settings.clock_skew
        if seen.started_by(mid):
            self.started.append(task)  # whatever its timestamp says: clocks differ
        elif self.own:
            self.in_context.append(task)
        elif since is not None and seen.updated_at is not None and seen.updated_at < since:
            return  # its status changed before the message was sent: not the one
        elif seen.holds(mid):
            self.holding += 1
        elif not seen.shows_start:
            self.blind += 1

    def hopeless(self) -> _Look | None:
        """What ends the look-up at once, whatever the rest of the listing holds; else None.

        Two tasks the messageId started make neither the answer; a page full of tasks none of
        which shows how it started says the agent keeps no record to find a task by.
        """
        if len(self.started) > 1:
            return _TWO_STARTED, True
        if self.listed >= self.settings.page_size and not self.shown and not self.own:
            return NO_START_SHOWN, True  # a page without one user's message first: none will
        return None

    def verdict(self) -> _Look | None:
        """What a listing read to its end says; None when it shows the task absent."""
        if self.started:
            return Found(self.started[0]), False
        if self.foreign:
            return Unresolved("the listing does not keep to the contextId it was asked for"), False
        if self.in_context:
            if len(self.in_context) == 1:
                return Found(self.in_context[0]), False  # the one task of its own context
            return Unresolved(f"{len(self.in_context)} tasks in the message's own context"), True
        if self.holding:
            why = "a task holds the messageId without having been started by it"
            return Unresolved(why), False
        if self.blind:
            return Unresolved(
                f"{self.blind} task(s) that could be the one do not show how they started "
                "(no history, or history without the user's message)"
            ), False
        return None


def card_dedupe() -> Generator[Query, Any, DedupeParams | None]:
    """Read the agent's card: the deduplication it advertises, if any."""
    card = yield CardQuery()
    if card is None or isinstance(card, Unanswered):
        return None
    return read_dedupe_params(card)


def follow_task(
    task: Any,
    settings: ExactlyOnce,
    view: Callable[[Any], TaskView],
    *,
    reread: bool = False,
    follow: bool = True,
) -> Generator[Query, Any, Any]:
    """Wait until ``task`` settles (terminal or interrupted) with GetTask; returns the task.

    Reads with pauses from ``poll_initial`` doubling up to ``poll_max``. The wait ends with
    the latest task read when the deadline comes (a pause that does not fit), when the agent
    no longer knows the task, or when a read is refused; a read that fails is retried until
    then (see `reading`'s ``patient``), so an unsettled task never ends the wait early.
    With ``reread`` (a task found in a listing, without artifacts, its history bounded) the
    task is read once whole at once, settled or not; without ``follow``, that read is all.
    """
    pause = settings.poll_initial
    seen = view(task)
    if reread and seen.task_id:
        latest = yield GetTaskQuery(seen.task_id)
        fresh = same_task(latest, seen.task_id, view)
        if fresh is not None:
            task, seen = latest, fresh
    while follow and not seen.settled and seen.task_id:
        if not (yield Pause(pause)):
            break
        pause = min(pause * 2, settings.poll_max)
        latest = yield GetTaskQuery(seen.task_id)
        fresh = same_task(latest, seen.task_id, view)
        if fresh is None:
            break
        task, seen = latest, fresh
    return task


def same_task(answer: Any, task_id: str, view: Callable[[Any], TaskView]) -> TaskView | None:
    """What is read of a GetTask ``answer``, if it is the task ``task_id`` asked for.

    None when it is not: no task (gone, or unanswered), or another task, which a confused
    agent or a caching hop may answer; a look-up never takes it for the one it asked for.
    """
    if answer is None or isinstance(answer, Unanswered):
        return None
    seen = view(answer)
    return seen if seen.task_id == task_id else None


# --- reads that retry -------------------------------------------------------------------------


Effect: TypeAlias = "MachineEffect"
"""What `reading` yields: effects of the one machine (`a2a_client_errors._effects`): its own
`Ask`, `Sleep`, `MayRead` and `Charge`, and whatever a `ReadSteps` door's reads yield (their
`Exchange` effects, and a wait's reads)."""

Asking: TypeAlias = (
    "Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None],"
    " Generator[Effect, Any, Any]]"
)
"""A query's read as effects (`ReadSteps.asking`)."""


class LookupAllowance:
    """A peer's allowance of look-up reads that go unanswered (see `ExactlyOnce.allowance`).

    A read may be made while the allowance holds at least one read; a read the agent
    answers costs nothing, whatever else is in flight, so look-ups of an agent that answers
    are never rationed, however many run at once. A read left unanswered is charged (the
    allowance may go below zero when many fail at once), and each look-up deposits
    ``per_call``: under an outage, once spent, at most ``per_call`` reads per look-up on
    average. Thread-safe.
    """

    __slots__ = ("_lock", "_reads", "capacity", "per_call")

    def __init__(self, capacity: float, per_call: float) -> None:
        import threading  # noqa: PLC0415 (only the allowance needs it)

        self.capacity = float(capacity)
        self.per_call = float(per_call)
        self._reads = float(capacity)
        self._lock = threading.Lock()

    @property
    def reads(self) -> float:
        """The reads left (below zero after a burst of failures)."""
        return self._reads

    def open(self) -> bool:
        """Whether a read may be made now."""
        return self._reads >= 1.0

    def charge(self) -> None:
        """Charge one read the agent left unanswered (never below ``-capacity``)."""
        with self._lock:
            self._reads = max(self._reads - 1.0, -self.capacity)

    def deposit(self) -> None:
        """What one look-up adds (``per_call``), up to ``capacity``."""
        if self._reads >= self.capacity:
            return
        with self._lock:
            self._reads = min(self.capacity, self._reads + self.per_call)


Judge: TypeAlias = (
    "Callable[[GetTaskQuery | ListTasksQuery | CardQuery, Exception, int], float | Unanswered]"
)
"""Given a query, what asking it raised and how many times it was asked: the seconds to wait
before asking again, or `Unanswered` saying why not."""

_RATIONED: Final = Unanswered(
    "the look-up allowance is spent: the agent left its recent look-ups unanswered", final=True
)
_NO_TIME: Final = Unanswered("the deadline came before the read was answered")


def reading(
    search: Generator[Query, Any, R],
    judge: Judge,
    *,
    clock: Callable[[], float],
    deadline_at: float | None,
    rationed: bool = True,
    patient: ExactlyOnce | None = None,
    ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any] | None = None,
    steps: Asking | None = None,
) -> Generator[Effect, Any, R]:
    """``search`` with each query asked as a read: failures judged and retried, in time.

    A pause of the search is taken when it fits before ``deadline_at`` (the search is told
    whether it was). A query that fails is asked again after the pause ``judge`` gives, while
    it fits; a query that cannot be answered is sent to the search as `Unanswered`.

    Args:
        search: `find_sent`, `follow_task`, or a search of the same kind.
        judge: how a failed read is judged (see `Judge`).
        clock: the Guard's clock.
        deadline_at: when the search must end (None: no bound).
        rationed: a read is made only while the peer's look-up allowance is open (`MayRead`),
            and one the agent leaves unanswered is charged to it (`Charge`): a look-up's reads.
        patient: a wait's reads (these settings): a failed read is retried whatever its
            attempts, pauses from ``poll_initial`` doubling up to ``poll_max`` (longer when
            the agent asks), until the deadline, or without one for ``timeout`` seconds of
            failures.
        ask: how a door asks one query (`TaskReader.ask`), carried by each `Ask`.
        steps: how a door asks one query as effects (`ReadSteps.asking`), in place of ``ask``:
            what they raise is the read's failure, judged as a failed `Ask`'s.

    """
    try:
        query = next(search)
        while True:
            if isinstance(query, Pause):
                fits = _fits(query.seconds, clock, deadline_at)
                if fits:
                    yield Sleep(query.seconds)
                query = search.send(fits)
                continue
            answer = yield from _read(
                query,
                judge,
                clock,
                deadline_at,
                rationed=rationed,
                patient=patient,
                ask=ask,
                steps=steps,
            )
            query = search.send(answer)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        search.close()


def _read(
    query: GetTaskQuery | ListTasksQuery | CardQuery,
    judge: Judge,
    clock: Callable[[], float],
    deadline_at: float | None,
    *,
    rationed: bool,
    patient: ExactlyOnce | None,
    ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any] | None,
    steps: Asking | None = None,
) -> Generator[Effect, Any, Any]:
    """One query's read, retried as judged: its answer, or `Unanswered`."""
    asked = 0
    failing_since: float | None = None
    while True:
        asked += 1
        left = None if deadline_at is None else deadline_at - clock()
        if left is not None and left <= 0:
            return _NO_TIME
        if rationed and not (yield MAY_READ):
            return _RATIONED
        if steps is None:
            answer = yield Ask(query, left, ask)
        else:
            read = stepwise(steps(query, left), "ReadSteps.asking")
            try:
                answer = yield from read
            except Exception as exc:  # the read failed: judged, as a failed Ask is
                answer = Failed(exc)
        if not isinstance(answer, Failed):
            return answer
        if rationed and not _answered(answer.exc):
            yield CHARGE  # not answered: an outage's read, counted against the allowance
        verdict = judge(query, answer.exc, 1 if patient is not None else asked)
        if isinstance(verdict, Unanswered):
            return verdict
        if patient is not None:
            now = clock()
            failing_since = now if failing_since is None else failing_since
            if deadline_at is None and now - failing_since >= patient.timeout:
                return Unanswered(f"the agent did not answer for {patient.timeout:g} s")
            backoff = patient.poll_initial * 2.0 ** min(asked - 1, 32)
            verdict = max(verdict, min(backoff, patient.poll_max))
        if not _fits(verdict, clock, deadline_at):
            return Unanswered("the deadline came before the read was retried")
        yield Sleep(verdict)


def stepwise(steps: object, name: str) -> Generator[Effect, Any, Any]:
    """``steps`` itself, a generator: what a `ReadSteps` method must give (else TypeError).

    A plain value iterated as effects would be carried out as nonsense (a dict's keys); a door
    that returns one from ``asking`` or ``finding`` is told so, and its look-up fails.
    """
    if not isinstance(steps, GeneratorType):
        raise TypeError(f"{name} must be a generator function; it gave {type(steps).__name__}")
    return steps


def _answered(exc: Exception) -> bool:
    """Whether a failed read was answered by a peer that is up (not an outage's failure)."""
    if not isinstance(exc, ReadFailedError):
        return False
    if exc.error is None:
        return True  # an answer of another shape, or larger than the bound
    from a2a_client_errors._breaker import peer_unwell  # noqa: PLC0415 (no cycle at import)

    return not peer_unwell(exc.error)


def _fits(seconds: float, clock: Callable[[], float], deadline_at: float | None) -> bool:
    return deadline_at is None or clock() + seconds < deadline_at


# --- timestamps -----------------------------------------------------------------------------------

_TIMESTAMP: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,12}))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?"
)


def parse_timestamp(text: object) -> float | None:
    """An RFC 3339 timestamp (as ProtoJSON and 0.3 write it) in seconds since the epoch.

    None for anything else; never raises. A timestamp without an offset (``Z`` or
    ``+hh:mm``) is None too: a naive local time may be hours off, so it decides nothing.
    """
    if not isinstance(text, str) or len(text) > 64:
        return None
    match = _TIMESTAMP.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    if zulu is None and sign is None:
        return None
    try:
        offset = timedelta(0)
        if zulu is None:
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

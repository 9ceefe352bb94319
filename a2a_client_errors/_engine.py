"""The call engine: every step of a guarded call, decided once; the I/O left to one driver pair.

A call is one `GuardedCall`. Its first attempt is made directly, and judged: a success ends
the call there (no generator, nothing to plan). Anything else goes to `GuardedCall.steps`, a
generator that decides each step and yields the effects to carry out
(`a2a_client_errors._effects`: an admission, an attempt, a spend, a sleep, a look-up's reads,
a fail-over, a credentials refresh, a journal's record). A look-up is part of the steps: its
reads (`a2a_client_errors._lookup.reading`) are effects of the same machine, judged beside
every other decision of the call.

A send the Guard's journal records is run by `GuardedCall.journaled` from its start: the
record is claimed before the first attempt, and closed with what the call ended in.

`drive` and `adrive` carry the effects out, for a call or for a door's reads outside one
(a wait); what they raise (an interrupt, a cancellation) is thrown into the generator, which
frees the breaker's probe and refunds a retry paid for and never sent. The generator returns
the call's value or raises its `CallFailed`; the hooks are told every decision on the way,
and one `CallRecord` when the call ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar

from a2a_client_errors._breaker import Admission, Verdict, admits_async, verdict_of
from a2a_client_errors._card_claims import read_against_card
from a2a_client_errors._effects import (
    ADMIT,
    SPEND,
    YIELD,
    Ask,
    Attempt,
    Charge,
    Failed,
    Look,
    MayRead,
    Record,
    Resolve,
    Sleep,
)
from a2a_client_errors._effects import Effect as MachineEffect
from a2a_client_errors._errors import CallError, ErrorKind
from a2a_client_errors._failures import (
    AlreadySent,
    AuthFailed,
    BudgetExhausted,
    CallFailed,
    DeadlineExceeded,
    DegradeNeeded,
    FixRequestNeeded,
    JournalUnavailable,
    OutcomeUnknown,
    PeerUnavailable,
    ReconcileNeeded,
    ReportNeeded,
    RequestMismatch,
    RetryAfterTooLong,
    RetryExhausted,
)
from a2a_client_errors._foreign_codes import read_generation
from a2a_client_errors._journal import (
    Entry,
    JournalError,
    JournalRecord,
    Made,
    Recovery,
    State,
    own_closes,
    task_made,
)
from a2a_client_errors._lookup import (
    WORK_OPERATIONS,
    Deduplicates,
    Found,
    GetTaskQuery,
    LookupResult,
    NotFound,
    Query,
    Resolution,
    SentMessage,
    TaskReader,
    Unanswered,
    Unresolved,
    card_dedupe,
    find_sent,
)
from a2a_client_errors._normalize import PeerAnswerError, normalize
from a2a_client_errors._policy import Decision, GiveUp
from a2a_client_errors._reasons import Action, Delivery, Reason, TransportFailure
from a2a_client_errors._retry import refunds, spends_async
from a2a_client_errors.hooks import (
    CallRecord,
    FailoverEvent,
    GuardEvent,
    JournalEvent,
    UnknownOutcomeEvent,
    tell_one,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator, Iterator

    from a2a_client_errors._breaker import CircuitBreakerLike
    from a2a_client_errors._card_claims import CardClaims
    from a2a_client_errors._journal import Journal, LeaseKeeper
    from a2a_client_errors._lookup import (
        AgentFacts,
        CardQuery,
        ExactlyOnce,
        ListTasksQuery,
        LookupAllowance,
    )
    from a2a_client_errors._policy import Policy
    from a2a_client_errors._retry import RetryBudgetLike
    from a2a_client_errors.hooks import Observers

__all__ = [
    "NO_KWARGS",
    "AttemptCutShortError",
    "AttemptOutcome",
    "CallShape",
    "GuardedCall",
    "Lookup",
    "Onward",
    "failure_for",
    "never_sent",
    "plain_success",
    "recording",
    "tell_record",
]

_log = logging.getLogger("a2a_client_errors")


class Configured(Protocol):
    """What the engine reads of the configuration it runs under (a `Guard`)."""

    policy: Policy
    max_attempts: int
    deadline: float | None
    clock: Callable[[], float]
    random: Callable[[], float]
    override: Callable[[Decision], Action | None] | None
    refresh_credentials: Callable[[Decision], object] | None
    exactly_once: ExactlyOnce
    breaker: CircuitBreakerLike | None
    observers: Observers
    journal: Journal | None
    leases: LeaseKeeper | None

    def budget_for(self, peer: str) -> RetryBudgetLike: ...
    def facts(self, agent: str) -> AgentFacts: ...
    def card_claims(self, agent: str) -> CardClaims | None: ...
    def sleep(self, seconds: float) -> None: ...
    async def asleep(self, seconds: float) -> None: ...
    def allowance_for(self, peer: str) -> LookupAllowance: ...
    def reads(
        self,
        search: Generator[Query, Any, R],
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
        *,
        agent: str,
        deadline_at: float | None = None,
        wait: bool = False,
    ) -> Generator[Effect, Any, R]: ...


Lookup: TypeAlias = "TaskReader | Callable[[float | None], LookupResult | Awaitable[LookupResult]]"
"""A look-up for what an attempt with an unknown outcome made.

A `TaskReader` (how to ask one GetTask or ListTasks of the agent): the Guard runs the search
(`a2a_client_errors._lookup.find_sent`) with it, each read retried as any read, paid for from
the peer's look-up allowance and ended by the deadline; it looks again and again until it
finds the task or the time is up. Or a function of your own: given the seconds it may take
(None: no bound), it returns `Found` (the call's answer), `NotFound` (your look-up proves
the task absent: a resend is safe; return it only where it can prove that) or `Unresolved`;
it may be a coroutine function in ``acall``, and what it raises counts as `Unresolved`."""


@dataclass(frozen=True, slots=True)
class CallShape:
    """What a call is, for the Guard: told up front, or learnt on its first failure.

    Attributes:
        operation: the A2A operation, if known.
        unsafe: why a resend would be unsafe whatever the outcome (a body that cannot be
            replayed, a SendMessage without a messageId), if it would be.
        creates_work: whether it may make a task (SendMessage, SendStreamingMessage, a batch
            holding one): an attempt with an unknown outcome is then looked up before any
            resend. Default: whether ``operation`` is one of those.
        sent: the message's identity, for the look-up and for `OutcomeUnknown`.
        lookup: how to look for what an attempt made (see `Lookup`); None: it cannot be looked
            for, and an unknown outcome is `OutcomeUnknown`.
        failover: whether the caller has another interface of the agent to send it over: then
            a retry of an attempt that was not sent (nothing reached the agent) is not made
            here, the call ends at once with give-up ``failover`` for the caller to move on
            (and an open breaker's `PeerUnavailable` tells no ``on_give_up``: the call goes on).
        answered: told the successful answer of a call whose shape is known by then (for a
            door to learn what the agent answers sends with, see `AgentFacts`).
        card: what the agent's card says it supports, or what finds it (called only when an
            attempt failed), when the door knows (default: what the Guard learnt for the
            call's peer, `Guard.learn_card`). An internal error answering an operation the
            card says is not supported is decided as the card's reason
            (`a2a_client_errors._card_claims.read_against_card`).
        asks_push: whether the call (a send) asks for push notifications: read against a
            card without them, its internal error is PUSH_NOTIFICATION_NOT_SUPPORTED. Only a
            door that reads the request can tell (the httpx transports do); `Guard.call`
            cannot, and leaves it False.
        generation_precondition: whether the call (a send) carried draft 1.1's
            ``ifGenerationMatch``: a bare -32010 answering a send known to carry none is not
            TASK_GENERATION_MISMATCH (`a2a_client_errors._foreign_codes.read_generation`).
            None: not known (the httpx transports read it; `Guard.call` cannot).
        entry: what the Guard's journal records of the send before its first byte (its
            messageId, its body's digest); None: the call is not journaled.
        made: what a successful answer made, for the journal (default:
            `a2a_client_errors._journal.task_made`, which reads the common forms).

    """

    operation: str | None = None
    unsafe: GiveUp | None = None
    creates_work: bool | None = None
    sent: SentMessage | None = None
    lookup: Lookup | None = None
    failover: bool = False
    answered: Callable[[Any], None] | None = None
    card: CardClaims | Callable[[], CardClaims | None] | None = None
    asks_push: bool = False
    entry: Entry | None = None
    made: Callable[[Any], Made | None] | None = None
    generation_precondition: bool | None = None

    @property
    def makes_work(self) -> bool:
        """Whether the call may make a task (see ``creates_work``)."""
        if self.creates_work is not None:
            return self.creates_work
        return self.operation in WORK_OPERATIONS


NO_SHAPE: Final = CallShape()
"""The shape of a call the caller said nothing about."""


@dataclass(slots=True)
class AttemptOutcome:
    """What one attempt produced: a value or an exception (or a breaker's refusal).

    A door that makes a call's first attempt itself (to spare a plain success the engine)
    hands it to `GuardedCall.run` as ``first``.
    """

    value: Any = None
    exc: BaseException | None = None
    refused: Admission | None = None


class AttemptCutShortError(TimeoutError):
    """The call's deadline came while an attempt was in flight (its outcome is unknown)."""


# --- what a door answers a FailOver with -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Onward:
    """Where a call goes on when it moves to the agent's next interface (a door's answer).

    Attributes:
        peer: the interface's key (its budget's and breaker's).
        fn: the attempt over that interface, called with ``args`` and ``kwargs``.
        shape: the call's shape there (its look-up, whether yet another interface follows).

    """

    peer: str
    fn: Callable[..., Any]
    shape: CallShape
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FailOver:
    """Ask the door for the agent's next interface (an `Onward`, or None: there is none)."""

    decision: Decision


@dataclass(frozen=True, slots=True)
class Refresh:
    """Ask the caller's ``refresh_credentials`` about ``decision``: True to try once more."""

    decision: Decision


Effect: TypeAlias = "MachineEffect | FailOver | Refresh"
"""What a call's steps yield: every effect of the machine, and the two that carry its decision."""


# --- failures -------------------------------------------------------------------------------

_FAILURES: Final[dict[Action, type[CallFailed]]] = {
    Action.RETRY: RetryExhausted,
    Action.RECONCILE: ReconcileNeeded,
    Action.DEGRADE: DegradeNeeded,
    Action.FIX_REQUEST: FixRequestNeeded,
    Action.REPORT: ReportNeeded,
    Action.AUTH: AuthFailed,
}
_GIVE_UPS: Final[dict[GiveUp, type[CallFailed]]] = {
    GiveUp.BUDGET: BudgetExhausted,
    GiveUp.DEADLINE: DeadlineExceeded,
    GiveUp.HINT_TOO_LONG: RetryAfterTooLong,
    GiveUp.OUTCOME_UNKNOWN: OutcomeUnknown,
    GiveUp.PEER_UNAVAILABLE: PeerUnavailable,
}


def failure_for(decision: Decision) -> type[CallFailed]:
    """The `CallFailed` subclass that a guarded call raises for ``decision``."""
    if decision.give_up is not None:
        return _GIVE_UPS.get(decision.give_up, _FAILURES[decision.action])
    return _FAILURES.get(decision.action, CallFailed)


# --- the records a caller collects ----------------------------------------------------------

_RECORDING: Final[contextvars.ContextVar[list[CallRecord] | None]] = contextvars.ContextVar(
    "a2a_client_errors_recording", default=None
)


def tell_record(observers: Observers, record: CallRecord) -> None:
    """Tell a call's end: to the hooks' ``on_call``, and to an active `recording`."""
    if observers["on_call"]:
        observers.tell("on_call", record)
    recorded = _RECORDING.get()
    if recorded is not None:
        recorded.append(record)


def plain_success(
    guard: Configured, peer: str, start: float, operation: Callable[[], str | None]
) -> CallRecord:
    """The record of a success a door judged itself (its fast path), told as any call's end.

    One attempt, served by ``peer``; ``operation`` is read only when the record is asked.
    """
    record = CallRecord(
        _OK, peer, None, 1, guard.clock() - start, interface=peer, describe=operation
    )
    tell_record(guard.observers, record)
    return record


class recording:  # noqa: N801 (a context manager, named as one uses it)
    """Collect the `CallRecord` of every guarded call made in this context, by any door.

    ::

        with recording() as calls:
            guard.call(fetch, operation="GetTask")
        calls[0].attempts

    Calls made by tasks and threads started inside the context are collected too, as far as
    they inherit it (asyncio tasks do; ``contextvars.copy_context`` for threads).
    """

    __slots__ = ("_token", "calls")

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self._token: contextvars.Token[list[CallRecord] | None] | None = None

    def __enter__(self) -> list[CallRecord]:
        self._token = _RECORDING.set(self.calls)
        return self.calls

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _RECORDING.reset(self._token)
            self._token = None

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(self.calls)


_LOOKED_UP: Final = frozenset({Action.RETRY, Action.REPORT})
_MISMATCH: Final = Reason.TASK_GENERATION_MISMATCH
# A call that could never be resent needs no look-up: its failure says so (maybe_processed).
_NEVER_RESENT: Final = frozenset(
    {GiveUp.NOT_REPLAYABLE, GiveUp.NO_MESSAGE_ID, GiveUp.STREAM_STARTED}
)
_NO_LOOKUP: Final = Unresolved("no look-up is known for this call")
_NO_TIME: Final = Unresolved("the deadline left no time to look")
_NO_BUDGET: Final = "the retry budget is spent: nothing was resent"
_RESENDS: Final = frozenset({Resolution.RESENT, Resolution.DEDUPLICATING})
"""The resolutions that mean a resend: told to the hooks only once it is sent."""
_CANCELLED: Final = "cancelled before it was sent"
_INTERRUPTED: Final = "the call was interrupted: its outcome is unknown"
_NAMED_NOTHING: Final = "its answer named no task: to be looked up"
_STILL_SENDING: Final = "another process is still sending it, and the deadline came"
_DEDUPLICATES: Final = Deduplicates()
_ELSEWHERE: Final = Unresolved(
    "not there on another interface of the agent, which may keep its own task store"
)
R = TypeVar("R")
_PLAIN: Final = (str, bytes, bytearray, memoryview, int, float)
_OK: Final = Decision(Action.OK)
TESTING: Final[dict[str, Any]] = {"on": False, "attempts": None}
"""The testing switch (`a2a_client_errors.testing.set_testing`): no sleeps, fewer attempts."""


def switch_testing(on: bool, attempts: int | None) -> tuple[bool, int | None]:
    """Set the testing switch; returns what it was (for `a2a_client_errors.testing`)."""
    previous = (TESTING["on"], TESTING["attempts"])
    TESTING["on"], TESTING["attempts"] = on, attempts
    return previous


class GuardedCall:
    """One guarded call: its state, the decision core, and the drivers (`run`, `arun`).

    Made by `Guard.begin`, for doors: fresh per call, shared by nothing. After the call ended,
    ``record`` is its `CallRecord`.
    """

    __slots__ = (
        "admission",
        "attempt",
        "budget",
        "cut_short",
        "deadline_at",
        "decision",
        "delay",
        "describe",
        "entry",
        "entry_of",
        "fail_over",
        "found",
        "guard",
        "held",
        "holds_end",
        "journal_record",
        "limit",
        "max_attempts",
        "maybe_processed",
        "moved",
        "now",
        "operation",
        "peer",
        "plain",
        "record",
        "refreshed",
        "resending",
        "resends",
        "resolution",
        "shape",
        "start",
        "told",
        "told_end",
        "unsafe",
        "why",
    )

    def __init__(
        self,
        guard: Configured,
        shape: CallShape = NO_SHAPE,
        peer: str | None = None,
        deadline: float | None = None,
        *,
        describe: Callable[[], CallShape] | None = None,
        plain: Callable[[Any], bool] | None = None,
        start: float | None = None,
        fail_over: Callable[[Decision], Onward | Awaitable[Onward | None] | None] | None = None,
        entry_of: Callable[[], Entry | None] | None = None,
    ) -> None:
        self.guard = guard
        self.entry_of = entry_of  # the journal's entry, told without the whole shape
        self.fail_over = fail_over
        self.moved = 0  # the attempts made over interfaces the call left
        self.describe = describe
        self.plain = plain
        self.shape = shape
        self.operation = shape.operation
        self.unsafe = shape.unsafe
        self.peer = peer or "default"
        self.start = guard.clock() if start is None else start
        limit = self.limit = deadline if deadline is not None else guard.deadline
        self.deadline_at = None if limit is None else self.start + limit
        cap = TESTING["attempts"] if TESTING["on"] else None
        self.max_attempts = guard.max_attempts if cap is None else min(cap, guard.max_attempts)
        self.attempt = 0
        self.decision: Decision | None = None
        self.delay = 0.0
        self.refreshed = False
        self.budget: RetryBudgetLike | None = None
        self.held = False  # a retry's token taken from the budget, its retry not sent yet
        self.now = self.start
        self.maybe_processed = False
        self.cut_short = False
        self.found: AttemptOutcome | None = None
        self.resolution: Resolution | None = None
        self.told: Resolution | None = None  # the resolution told, for the record
        self.resends = False  # whether a resend follows the look-up, if the agent's word allows
        # A resend the look-up allowed, told to the hooks when it goes out (`_attempt`), and
        # as not resent when the call ends first (`end`): the decision it was allowed by.
        self.resending: Decision | None = None
        self.why = ""
        self.admission: Admission | None = None
        self.record: CallRecord | None = None
        # A door whose call goes on after its answer (a stream) tells its success itself.
        self.holds_end = False
        self.told_end = False
        self.entry: Entry | None = None  # the journaled send, once claimed or taken over
        self.journal_record: JournalRecord | None = None

    # --- running the call -----------------------------------------------------------------

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        first: AttemptOutcome | None = None,
    ) -> Any:
        """Run the call with sync I/O: ``fn(*args, **kwargs)`` per attempt; return or raise."""
        kwargs = kwargs if kwargs is not None else NO_KWARGS
        if first is None:
            if self.guard.journal is not None:
                entry = self._journaled()
                if entry is not None:
                    send = (fn, args, kwargs)
                    return drive(self.journaled(entry), self.guard, self.peer, self, send)
            first = self._first(fn, args, kwargs)
        steps = self.steps(first)
        try:
            effect = next(steps)  # the first attempt judged: a success ends here
        except StopIteration as stop:
            return stop.value
        return drive(steps, self.guard, self.peer, self, (fn, args, kwargs), effect=effect)

    async def arun(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        first: AttemptOutcome | None = None,
    ) -> Any:
        """`run`, awaiting what returns awaitables; the deadline cuts an attempt in flight."""
        kwargs = kwargs if kwargs is not None else NO_KWARGS
        if first is None:
            if self.guard.journal is not None:
                entry = self._journaled()
                if entry is not None:
                    send = (fn, args, kwargs)
                    return await adrive(self.journaled(entry), self.guard, self.peer, self, send)
            first = await self._afirst(fn, args, kwargs)
        steps = self.steps(first)
        try:
            effect = next(steps)  # the first attempt judged: a success ends here
        except StopIteration as stop:
            return stop.value
        return await adrive(steps, self.guard, self.peer, self, (fn, args, kwargs), effect=effect)

    def _first(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AttemptOutcome:
        """The first attempt, unless the peer's breaker refuses it (then nothing is sent)."""
        breaker = self.guard.breaker
        if breaker is None:
            return attempt_once(fn, args, kwargs)
        admission = self.admission = breaker.admit(self.peer)
        if not admission.allowed:
            return AttemptOutcome(refused=admission)
        try:
            return attempt_once(fn, args, kwargs)
        except BaseException:  # interrupted: no verdict, and the probe's slot is freed
            self._verdict(Verdict.ABANDONED)
            raise

    async def _afirst(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AttemptOutcome:
        if self.guard.breaker is not None:
            admission = await self._aadmit()
            if not admission.allowed:
                return AttemptOutcome(refused=admission)
            try:
                return await _aattempt(fn, args, kwargs, self._attempt_time())
            except BaseException:  # cancelled: no verdict, and the probe's slot is freed
                self._verdict(Verdict.ABANDONED)
                raise
        return await _aattempt(fn, args, kwargs, self._attempt_time())

    async def _aadmit(self) -> Admission:
        breaker = self.guard.breaker
        assert breaker is not None  # noqa: S101 (asked only when set)
        admission = (
            await breaker.aadmit(self.peer) if admits_async(breaker) else breaker.admit(self.peer)
        )
        self.admission = admission
        return admission

    def _looking(
        self,
        lookup: Lookup,
        until: float,
        search: Generator[Query, Any, LookupResult] | None,
    ) -> Generator[Effect, Any, LookupResult]:
        """A look-up, as effects of this call: a `TaskReader`'s reads, or one `Look`.

        A look-up that fails could not look: `Unresolved`, saying what failed.
        """
        if not isinstance(lookup, TaskReader):
            result: LookupResult = yield Look(lookup, until)
            return result
        assert search is not None  # noqa: S101 (made with its reader)
        try:
            searched = yield from self.guard.reads(
                search, lookup.ask, agent=lookup.agent, deadline_at=until
            )
            found = _searched(lookup, searched)
            if isinstance(found, Found) and inspect.isawaitable(found.value):
                found = Found((yield Resolve(found.value)))
        except TimeoutError:
            return Unresolved("the look-up did not finish in time")
        except Exception as exc:  # a look-up that fails could not look
            return Unresolved(f"the look-up failed ({type(exc).__name__})")
        return found

    # --- the journal ------------------------------------------------------------------------

    def _journaled(self) -> Entry | None:
        """The journal's entry of this call (a send), under a Guard that has a journal."""
        if self.entry_of is not None and self.describe is not None:
            return self.entry_of()  # the rest of the shape is read only if a decision needs it
        self._know()
        shape = self.shape
        return shape.entry if shape.makes_work else None

    def journaled(self, entry: Entry) -> Generator[Effect, Any, Any]:
        """A send the journal records: claimed before its first byte, closed with its end.

        A messageId that has a record makes no second first attempt (`_recorded`). A journal
        that cannot record the send fails the call before anything is sent.
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        assert journal is not None  # noqa: S101 (set together with leases)
        assert keeper is not None  # noqa: S101
        owner = keeper.owner
        self.entry = entry

        def claim() -> tuple[JournalRecord, bool]:
            own_closes(entry.message_id)  # this process's own close of it, if pending
            return journal.claim(entry, owner)

        def undo(claimed: tuple[JournalRecord, bool]) -> None:
            if claimed[1]:  # cancelled while claiming: nothing was sent under the claim
                journal.settle(entry.message_id, owner, State.REFUSED, note=_CANCELLED)

        try:
            record, mine = yield Record(claim, undo)
        except JournalError as exc:
            raise self._unavailable(exc) from exc
        if mine:
            keeper.hold()
            self.journal_record = record
            self._tell_journal("recorded", record)
        else:
            found = yield from self._known(entry, record, claim)
            if found is not None:
                return self._answered(found)
        return (yield from self._sent())

    def _known(
        self, entry: Entry, record: JournalRecord, claim: Callable[[], tuple[JournalRecord, bool]]
    ) -> Generator[Effect, Any, Found | None]:
        """`_recorded`, its failure told as the call's end; an interruption lets go of it."""
        try:
            return (yield from self._recorded(entry, record, claim))
        except CallFailed as failure:
            if failure.record is None:
                self._ended(failure)
            raise
        except BaseException:
            self._abandon()  # interrupted while it held a record it took over
            raise

    def _sent(self) -> Generator[Effect, Any, Any]:
        """The send of a record this call holds: its attempts, then its close."""
        try:
            outcome = yield from self._attempt()
            value = yield from self.steps(outcome)
        except CallFailed as failure:
            yield from self._close_failed(failure)
            raise
        except BaseException:
            self._abandon()  # interrupted: left open for a look-up, held by nobody
            raise
        yield from self._close(value)
        return value

    def _recorded(
        self, entry: Entry, record: JournalRecord, claim: Callable[[], tuple[JournalRecord, bool]]
    ) -> Generator[Effect, Any, Found | None]:
        """A messageId already recorded: its answer (`Found`), or None when it goes out now.

        A task recorded is read back (`_replay`); a live sender is waited for; a send nobody
        holds (its sender died, or its outcome was left unknown) is taken over and looked up
        (`_take_over`). It goes out only as the claim of a record closed as refused
        meanwhile, or where the agent's word allows a resend.
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        assert journal is not None  # noqa: S101 (set together with leases)
        assert keeper is not None  # noqa: S101
        self._know()  # its look-up, to read back or find what the record names
        owner = keeper.owner
        message_id = entry.message_id
        if record.digest != entry.digest:
            self._tell_journal("mismatch", record)
            raise RequestMismatch(self.operation, record)
        pause = guard.exactly_once.poll_initial
        waited = False
        while True:
            mine = False
            try:
                if record.state is State.TASK:
                    return (yield from self._replay(record))
                if record.state is State.MESSAGE:
                    self._tell_journal("replayed", record)
                    raise AlreadySent(self.operation, record)
                if record.state is State.OPEN and not record.lapsed:  # a live sender
                    if not waited:
                        waited = True
                        self._tell_journal("waited", record)
                    if self.deadline_at is not None and guard.clock() + pause > self.deadline_at:
                        raise self._unknown_recorded(record, _STILL_SENDING)
                    yield Sleep(pause)
                    pause = min(pause * 2, guard.exactly_once.poll_max)
                    latest = yield Record(lambda: journal.get(message_id))
                elif record.state is State.OPEN:
                    taken = yield Record(lambda: journal.take_over(message_id, owner))
                    if taken is not None:
                        keeper.hold()
                        self.journal_record = taken
                        self._tell_journal("took_over", taken)
                        # The latest its sender could have sent: when its lease lapsed.
                        return (yield from self._take_over(taken, record.lease_until))
                    latest = yield Record(lambda: journal.get(message_id))
                else:
                    latest = None
                if latest is None:  # refused (or gone) meanwhile: a new first attempt
                    latest, mine = yield Record(claim)
            except JournalError as exc:
                raise self._unavailable(exc) from exc
            if mine:
                keeper.hold()
                self.journal_record = latest
                self._tell_journal("recorded", latest)
                return None
            record = latest

    def _replay(self, record: JournalRecord) -> Generator[Effect, Any, Found]:
        """The task a record holds, read back (settled as a blocking send answers)."""
        lookup = self.shape.lookup
        if lookup is not None and record.made:
            search = _read_task(record.made) if isinstance(lookup, TaskReader) else None
            result = yield from self._looking(lookup, self._look_until(), search)
            if isinstance(result, Found):
                self._tell_journal("replayed", record)
                return result
        self._tell_journal("replayed", record)
        raise AlreadySent(self.operation, record)

    def _take_over(
        self, record: JournalRecord, held_until: float
    ) -> Generator[Effect, Any, Found | None]:
        """A send nobody holds, taken over: found, resent on the agent's word, or unknown.

        ``held_until``: see `_look_recorded`.
        """
        guard = self.guard
        self.maybe_processed = True
        wall = guard.exactly_once.wall_clock()
        if guard.exactly_once.deduplicates(self.peer) or guard.facts(self._agent()).dedupe_covers(
            wall - record.started
        ):
            return None  # the agent's deduplication covers the resend
        self.resends = True
        result = yield from self._look_recorded(record, held_until)
        if isinstance(result, Found):
            yield from self._close(result.value)
            return result
        if isinstance(result, (NotFound, Deduplicates)):
            return None  # the agent's word (its listing contract, its deduplication)
        why = result.why
        yield from self._write_close(State.OPEN, None, why)
        raise self._unknown_recorded(self.journal_record or record, why)

    def recovering(self, record: JournalRecord) -> Generator[Effect, Any, Recovery]:
        """Come back to an open record: take it over and look its task up; never send.

        Found: the record is closed with the task (`Recovery` ``found``). Otherwise it is
        left open, held by nobody: ``unknown``, or ``absent`` where the agent's word says
        the message made nothing (its next send then goes out). A record a live sender
        holds is left alone (``held``).
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        assert journal is not None  # noqa: S101 (recovered only with a journal)
        assert keeper is not None  # noqa: S101
        owner = keeper.owner
        message_id = record.message_id
        try:
            taken = yield Record(lambda: journal.take_over(message_id, owner))
        except JournalError as exc:
            raise self._unavailable(exc) from exc
        if taken is None:
            return Recovery(record, "held", why="a live sender holds it, or it was closed")
        keeper.hold()
        self.entry = Entry(message_id, taken.digest, taken.peer, taken.context_id, taken.task_id)
        self.journal_record = taken
        self.maybe_processed = True
        try:
            result = yield from self._look_recorded(taken, record.lease_until)
        except BaseException:
            self._abandon()  # interrupted: left open, held by nobody
            raise
        if isinstance(result, Found):
            yield from self._close(result.value)
            closed = self.journal_record or taken
            self._tell_journal("recovered", closed)
            return Recovery(closed, "found", result.value)
        if isinstance(result, (NotFound, Deduplicates)):
            why = "the agent's word says it made nothing: its next send goes out"
            yield from self._write_close(State.OPEN, None, why)
            return Recovery(self.journal_record or taken, "absent", why=why)
        yield from self._write_close(State.OPEN, None, result.why)
        return Recovery(self.journal_record or taken, "unknown", why=result.why)

    def _look_recorded(
        self, record: JournalRecord, held_until: float
    ) -> Generator[Effect, Any, LookupResult]:
        """Look up what a recorded send made, drawing on the look-up allowance.

        ``held_until`` is when the record stopped being held (its last sender's lease
        lapsed, or it was released): the latest the message could have been sent.
        """
        lookup = self.shape.lookup
        if lookup is None:
            return _NO_LOOKUP
        guard = self.guard
        guard.allowance_for(self.peer).deposit()
        search = None
        if isinstance(lookup, TaskReader):
            search = self._search(lookup, record.sent, lambda: _since(guard, held_until))
        result: LookupResult = yield from self._looking(lookup, self._look_until(), search)
        return result

    def _look_until(self) -> float:
        """When a look-up ends: the deadline, or ``ExactlyOnce.timeout`` from now."""
        if self.deadline_at is not None:
            return self.deadline_at
        return self.guard.clock() + self.guard.exactly_once.timeout

    def _close(self, value: Any) -> Generator[Effect, Any, None]:
        """Close the record with what the answer made (a task, a Message; unknown: left open)."""
        made_of = self.shape.made or task_made
        try:
            made = made_of(value)
        except Exception:  # an answer its reader cannot read tells nothing
            made = None
        if made is None:
            yield from self._write_close(State.OPEN, None, _NAMED_NOTHING)
        elif made.task_id is None:
            yield from self._write_close(State.MESSAGE, None, "")
        else:
            yield from self._write_close(State.TASK, made.task_id, "")

    def _close_failed(self, failure: CallFailed) -> Generator[Effect, Any, None]:
        """Close the record of a send that failed: refused, or left open (its outcome unknown)."""
        decision = failure.decision
        summary = decision.action.value
        if decision.reason is not None:
            summary += f" {decision.reason}"
        if decision.give_up is not None:
            summary += f" (gave up: {decision.give_up.value})"
        if isinstance(failure, OutcomeUnknown):
            yield from self._write_close(State.OPEN, None, failure.why or summary)
            failure.journal_record = self.journal_record
        elif failure.maybe_processed:
            yield from self._write_close(State.OPEN, None, f"{summary}: its outcome is unknown")
        else:
            yield from self._write_close(State.REFUSED, None, summary)

    def _write_close(
        self, state: State, made: str | None, note: str
    ) -> Generator[Effect, Any, None]:
        """Write how the send ended: settled before the caller has its answer, released soon.

        A settle (a task, a Message, a refusal) is written before the call returns, so a
        process that dies once its caller has the answer leaves that answer recorded: a
        restart reads it back, whether or not the agent can list its tasks. A settle that
        fails is retried off the caller's path; a release (the outcome unknown) is always
        written off it, by the lease keeper's closer thread, at once.
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        entry, record = self.entry, self.journal_record
        if journal is None or keeper is None or entry is None or record is None:
            return
        owner = keeper.owner
        message_id = entry.message_id

        def close() -> bool:
            if state is State.OPEN:
                return journal.release(message_id, owner, note)
            return journal.settle(message_id, owner, state, made=made, note=note)

        self.journal_record = record = replace(
            record, state=state, made=made, note=note, owner=None, lapsed=state is State.OPEN
        )
        self.entry = None  # closed once
        then = None
        if self.guard.observers["on_journal"]:
            kind = "released" if state is State.OPEN else "settled"

            def then(failed: BaseException | None) -> None:
                if failed is None:
                    self._tell_journal(kind, record)
                else:
                    self._tell_journal("failed", record, str(failed))

        if state is State.OPEN:
            keeper.close_soon(message_id, close, then)  # written at once, off the caller's path
            return

        def settle() -> None:
            """The settle, here; one that fails goes to the closer thread (retried there)."""
            try:
                close()
            except Exception:
                keeper.close_soon(message_id, close, then)
                return
            keeper.drop()
            if then is not None:
                then(None)  # observers are told through `Observers.tell`, which never raises

        yield Record(settle)  # it never raises; in arun its thread finishes it if cancelled

    def _abandon(self) -> None:
        """The call was interrupted while it held its record: left open, held by nobody."""
        guard = self.guard
        journal, keeper, entry = guard.journal, guard.leases, self.entry
        if journal is None or keeper is None or entry is None or self.journal_record is None:
            return
        self.entry = None
        owner, message_id = keeper.owner, entry.message_id
        keeper.close_soon(message_id, lambda: journal.release(message_id, owner, _INTERRUPTED))

    def _ended(self, failure: CallFailed) -> None:
        """A journaled call that ends before any attempt: told, and its record made."""
        guard = self.guard
        self.decision = failure.decision
        if guard.observers["on_give_up"]:
            guard.observers.tell("on_give_up", self._event(failure.decision, guard.clock()))
        failure.record = self.end()

    def _answered(self, found: Found) -> Any:
        """A journaled call answered by what its record names (read back, or found)."""
        guard = self.guard
        decision = self.decision = Decision(
            Action.OK, operation=self.operation, attempt=self.attempt
        )
        if guard.observers["on_decision"]:
            guard.observers.tell("on_decision", self._event(decision, guard.clock()))
        if not self.holds_end:
            self.end()
        return found.value

    def _unavailable(self, exc: JournalError) -> JournalUnavailable:
        """The journal failed before anything was sent: the call's failure, told and recorded."""
        guard = self.guard
        if guard.observers["on_journal"]:
            entry = self.entry
            event = JournalEvent(
                "failed", "" if entry is None else entry.message_id, self.peer, None, str(exc)
            )
            guard.observers.tell("on_journal", event)
        failure = JournalUnavailable(self.operation, str(exc))
        self._ended(failure)
        return failure

    def _unknown_recorded(self, record: JournalRecord, why: str) -> OutcomeUnknown:
        """`OutcomeUnknown` for a recorded send whose end could not be learnt here."""
        decision = Decision(Action.RETRY, operation=self.operation, give_up=GiveUp.OUTCOME_UNKNOWN)
        self.decision = decision
        self.why = why
        failure = OutcomeUnknown(decision, attempts=0, sent=record.sent, why=why)
        failure.journal_record = record
        self._ended(failure)
        return failure

    def _tell_journal(self, kind: str, record: JournalRecord, why: str = "") -> None:
        observers = self.guard.observers
        if observers["on_journal"]:
            event = JournalEvent(kind, record.message_id, self.peer, record.state.value, why)
            observers.tell("on_journal", event)

    # --- the decision core --------------------------------------------------------------------

    def steps(self, outcome: AttemptOutcome) -> Generator[Effect, Any, Any]:
        """Every step of the call from its first attempt's ``outcome`` on, each judged alike.

        Yields the effects to carry out; returns the call's value, or raises its failure.
        """
        decision: Decision | None = None
        while True:
            if outcome.refused is not None:
                self._refused(outcome.refused)
                if (yield from self._moves(self.decision)):
                    outcome = yield from self._attempt()
                    continue
                return self.finish(outcome)
            if decision is None:  # an attempt not judged yet
                decision = self._decide(outcome)
                if decision is None:
                    return outcome.value
            if self.shape.failover and _moves_on(decision):
                given_up = decision.given_up(GiveUp.FAILOVER)
                if self.fail_over is None:  # the caller moves it on itself
                    self._settle(given_up)
                    return self.finish(outcome)
                if (yield from self._moves(given_up, settle=True)):
                    decision = None
                    outcome = yield from self._attempt()
                    continue
            retry = yield from self._judge(decision)
            decision = None
            if retry:
                try:
                    yield Sleep(self.delay)
                    yield YIELD  # before the token is used: a cancellation here refunds it
                    outcome = yield from self._attempt()
                except BaseException:
                    self.unspend()  # a retry paid for and never sent costs nothing
                    raise
                continue
            if self._refreshes():
                assert self.decision is not None  # noqa: S101 (settled)
                if not (yield Refresh(self.decision)):
                    return self.finish(outcome)  # the refresh said no: the auth decision stands
                yield YIELD
                outcome = yield from self._attempt()
                continue
            if self.found is not None:
                return self.finish(self.found)
            return self.finish(outcome)

    def _attempt(self) -> Generator[Effect, Any, AttemptOutcome]:
        """One attempt after the first: admitted by the breaker, timed by the deadline."""
        self.held = False  # a retry sent has used its token
        if self.guard.breaker is not None:
            admission = yield ADMIT
            self.admission = admission
            if not admission.allowed:
                return AttemptOutcome(refused=admission)
        resending = self.resending
        if resending is not None:  # the resend a look-up allowed goes out now: told now
            self.resending = None
            self._tell_unknown(resending)
            self.resolution = None
        try:
            outcome: AttemptOutcome = yield Attempt(self._attempt_time())
        except BaseException:  # interrupted, cancelled: no verdict, and the probe's slot is freed
            if self.guard.breaker is not None:
                self._verdict(Verdict.ABANDONED)
            raise
        return outcome

    def _attempt_time(self) -> float | None:
        """The time an attempt may take: what is left of the deadline, part kept to look up."""
        deadline_at = self.deadline_at
        if deadline_at is None:
            return None
        left = deadline_at - self.guard.clock()
        if self.shape.makes_work:
            # Keep part of the deadline for the look-up, should this attempt's answer be lost.
            left = self.guard.exactly_once.attempt_time(left, self.limit)
        return max(left, 0.0)

    def _moves(
        self, decision: Decision | None, *, settle: bool = False
    ) -> Generator[Effect, Any, bool]:
        """Move the call to the agent's next interface, if the door has one: True when moved.

        Only a call the door may move (``shape.failover``, a ``fail_over`` given), after an
        attempt that sent nothing (or none the breaker let go). The hooks are told the
        decision that left (``settle``) and the move (`Hook.on_failover`).
        """
        if decision is None or not self.shape.failover or self.fail_over is None:
            return False
        onward: Onward | None = yield FailOver(decision)
        if onward is None:  # none could be built after all: the call stays where it is
            self.shape = replace(self.shape, failover=False)
            return False
        if settle:
            self._settle(decision)
        guard = self.guard
        if guard.observers["on_failover"]:
            event = FailoverEvent(decision, self.peer, onward.peer, self.operation)
            guard.observers.tell("on_failover", event)
        self.peer, self.budget, self.admission = onward.peer, None, None
        self.shape = onward.shape
        self.operation, self.unsafe = onward.shape.operation, onward.shape.unsafe
        self.moved += self.attempt
        self.attempt = 0
        self.decision = None
        return True

    def _onward(self, effect: FailOver) -> Onward | Awaitable[Onward | None] | None:
        assert self.fail_over is not None  # noqa: S101 (asked only when given)
        return self.fail_over(effect.decision)

    def _judge(self, decision: Decision) -> Generator[Effect, Any, bool]:
        """Settle a failure's decision (look-up, budget): True when a retry follows."""
        if self._unknown_work(decision):
            settled = yield from self._resolve(decision)
            if settled is None:
                return False  # found: the call's answer
            decision = settled
        elif decision.will_retry:
            spent = self.held = bool((yield SPEND))
            decision = decision if spent else decision.given_up(GiveUp.BUDGET)
        self._resolved(decision)
        return self._settle(decision)

    def _verdict(self, verdict: Verdict, error: CallError | None = None) -> Verdict:
        """Tell the breaker how the attempt went (a call started elsewhere counts too)."""
        breaker = self.guard.breaker
        if breaker is None:
            return verdict
        admission, self.admission = self.admission, None
        probe = admission is not None and admission.probe
        retry_after = None if error is None else error.retry_after
        breaker.record(self.peer, verdict, probe=probe, retry_after=retry_after)
        return verdict

    def _refused(self, admission: Admission) -> None:
        """The breaker refused the attempt: the call ends in `PeerUnavailable`."""
        guard = self.guard
        now = self.now = guard.clock()
        self._know()
        decision = Decision(
            Action.RETRY,
            None,
            admission.retry_in,
            None,
            self.operation,
            self.attempt,
            None,
            GiveUp.PEER_UNAVAILABLE,
        )
        self.decision = decision
        observers = guard.observers
        if observers["on_decision"]:
            observers.tell("on_decision", self._event(decision, now))
        if observers["on_peer_unavailable"]:
            observers.tell("on_peer_unavailable", self._event(decision, now))

    def unspend(self) -> None:
        """The retry paid for was never sent (the caller gave up while it waited): refund it.

        The token goes back to the budget when it can take it (``refund``); never raises.
        """
        if not self.held:
            return
        self.held = False
        budget = self.budget
        if budget is not None and refunds(budget):
            try:
                budget.refund()
            except Exception:  # a budget's bug never hides why the call ended
                _log.exception("a2a_client_errors: the retry budget's refund failed")

    # --- unknown outcomes of calls that create work ------------------------------------------

    def _unknown_work(self, decision: Decision) -> bool:
        """Whether the failure is an unknown outcome of a call that may have made a task.

        Such a call is resent only on the agent's word (see `_resolve`); a broken answer
        (``report``: INVALID_AGENT_RESPONSE, a stream with no event) is never resent, and is
        looked up where a look-up exists, for the task it may be.
        """
        error = decision.error
        if (
            decision.action not in _LOOKED_UP
            or error is None
            or error.delivery is not Delivery.UNKNOWN
            or not self.shape.makes_work
            or decision.give_up in _NEVER_RESENT
        ):
            return False
        return decision.action is Action.RETRY or self.shape.lookup is not None

    def _resolve(self, decision: Decision) -> Generator[Effect, Any, Decision | None]:
        """An unknown outcome: resent on the agent's word, found, or `OutcomeUnknown`.

        A resend follows at once only where the agent's deduplication covers it (declared;
        or advertised, confirmed by its answers, and inside the advertised ttl) and the
        budget pays for it. Otherwise the task is looked for (always, budget or not: the
        look-up draws on its own allowance), until found or the time is up. None when found
        (the call's answer); else the decision that stands: a resend the agent's word allows
        (a listing contract, a card read meanwhile), or the give-up ``outcome_unknown``.
        """
        self.delay = decision.delay or 0.0  # the pause before a resend, should one follow
        if decision.will_retry and self._dedupe_covers(decision) and (yield SPEND):
            self.held = True
            self.resolution = Resolution.DEDUPLICATING
            return decision
        self.resends = decision.will_retry
        for _ in range(2):
            result = yield from self._look()
            settled = self._looked(decision, result)
            if settled is None or not settled.will_retry:
                return settled
            if self._too_late(settled):  # the look-up took the time the resend needed
                return settled.given_up(GiveUp.DEADLINE)
            if (yield SPEND):
                self.held = True
                return settled
            if not isinstance(result, Deduplicates):
                break
            self.resends = False  # no resend can be paid for: the task is looked for instead
        self.resolution = Resolution.UNRESOLVED
        self.why = _NO_BUDGET
        return decision.given_up(GiveUp.OUTCOME_UNKNOWN)

    def _too_late(self, decision: Decision) -> bool:
        """Whether a retry planned before the look-up can no longer start before the deadline.

        The rule of `Policy.plan`, again with the time the look-up left.
        """
        deadline_at = self.deadline_at
        if deadline_at is None:
            return False
        return (decision.delay or 0.0) >= deadline_at - self.guard.clock()

    def _dedupe_covers(self, decision: Decision) -> bool:
        """Whether the agent's deduplication covers a resend after ``decision``'s pause."""
        guard = self.guard
        if guard.exactly_once.deduplicates(self.peer):
            return True
        facts = guard.facts(self._agent())
        return facts.dedupe_covers(guard.clock() - self.start + (decision.delay or 0.0))

    def _agent(self) -> str:
        """The key what is learnt of the agent is kept under (`AgentFacts`)."""
        lookup = self.shape.lookup
        return lookup.agent if isinstance(lookup, TaskReader) else self.peer

    def _look(self) -> Generator[Effect, Any, LookupResult]:
        """The look-up, within the deadline (or its own time), drawing on its allowance."""
        lookup = self.shape.lookup
        if lookup is None:
            return _NO_LOOKUP
        guard = self.guard
        now = guard.clock()
        until = now + guard.exactly_once.timeout
        if self.deadline_at is not None:
            if self.deadline_at <= now:
                return _NO_TIME
            until = self.deadline_at
        guard.allowance_for(self.peer).deposit()  # each look-up adds its share of a read
        search = self._search(lookup) if isinstance(lookup, TaskReader) else None
        result: LookupResult = yield from self._looking(lookup, until, search)
        return result

    def _search(
        self,
        reader: TaskReader,
        sent: SentMessage | None = None,
        since_lost: Callable[[], float] | None = None,
    ) -> Generator[Query, Any, LookupResult]:
        """The look-up: the agent's card first (once per agent), then the search.

        An agent whose card advertises deduplication, confirmed by its answers, needs no
        search when a resend follows inside the ttl (`Deduplicates`). The search knows what
        the agent answers messages with, and the listing contract declared for the peer.
        """
        guard = self.guard
        facts = guard.facts(reader.agent)
        if not facts.card_read:
            facts.card_read = True
            params = yield from card_dedupe()
            if params is not None:
                facts.deduplicates = True
                ttl = facts.dedupe_ttl  # its answers' mark may say less: the shorter holds
                facts.dedupe_ttl = params.ttl if ttl is None else min(ttl, params.ttl)
        if self.resends and facts.dedupe_covers(guard.clock() - self.start + self.delay):
            return _DEDUPLICATES
        lost_at = self.now
        return (
            yield from find_sent(
                reader.sent if sent is None else sent,
                guard.exactly_once,
                reader.view,
                answers_with_messages=facts.answers_with_messages,
                listed_within=guard.exactly_once.listing_contract(self.peer),
                since_lost=since_lost or (lambda: guard.clock() - lost_at),
            )
        )

    def _looked(self, decision: Decision, result: LookupResult) -> Decision | None:
        """The decision after the look-up: None when the task was found (the call's answer)."""
        guard = self.guard
        observers = guard.observers
        if isinstance(result, Found):
            self.budget_now().credit()  # the peer answered the look-up: it is up
            if observers["on_decision"]:  # the attempt's error, as any other
                observers.tell("on_decision", self._event(decision, self.now))
            self.resolution = Resolution.FOUND
            self.found = AttemptOutcome(value=result.value)
            self._tell_unknown(decision)
            found = Decision(Action.OK, operation=self.operation, attempt=self.attempt)
            self.decision = found
            if observers["on_decision"]:  # the call ended well: it answered
                observers.tell("on_decision", self._event(found, guard.clock()))
            return None
        if isinstance(result, NotFound):  # by the caller's word (a listing contract, its own)
            self.resolution = Resolution.RESENT  # or NOT_FOUND, once the retry is settled
            return decision
        if isinstance(result, Deduplicates):  # its card says so, its answers confirm it
            self.resolution = Resolution.DEDUPLICATING
            return decision
        self.resolution = Resolution.UNRESOLVED
        self.why = result.why
        if decision.action is not Action.RETRY:
            return decision  # never resent anyway: the failure stands (maybe_processed)
        return decision.given_up(GiveUp.OUTCOME_UNKNOWN)

    def _resolved(self, decision: Decision) -> None:
        """Tell the hooks how an unknown outcome ended, once the retry is settled.

        A resend (``resent``, ``deduplicating``) is told when it goes out, not here: the
        pause before it, the breaker or the end of the call may yet stop it (`_unsent`).
        """
        resolution = self.resolution
        if resolution is None:
            return
        if resolution in _RESENDS and decision.will_retry:
            self.resending = decision
            return
        if resolution is Resolution.RESENT and not decision.will_retry:
            self.resolution = resolution = Resolution.NOT_FOUND
        if resolution is Resolution.DEDUPLICATING and not decision.will_retry:
            self.resolution = None
            return
        self._tell_unknown(decision)
        self.resolution = None

    def _unsent(self) -> None:
        """The call ends before the resend a look-up allowed went out: told as not resent.

        ``resent`` becomes ``not_found`` (absent, and the call gave up), with the call's final
        decision; ``deduplicating`` is told nothing, as when no resend was planned.
        """
        if self.resending is None:
            return
        self.resending = None
        if self.resolution is Resolution.RESENT:
            self.resolution = Resolution.NOT_FOUND
            self._tell_unknown(self.decision or _OK)
        self.resolution = None

    def _tell_unknown(self, decision: Decision) -> None:
        assert self.resolution is not None  # noqa: S101 (told only once resolved)
        self.told = self.resolution
        guard = self.guard
        if not guard.observers["on_unknown_outcome"]:
            return
        event = UnknownOutcomeEvent(
            decision,
            self.resolution,
            self.peer,
            self.operation,
            self.attempt,
            guard.clock() - self.start,
            self.shape.sent,
            self.why,
        )
        guard.observers.tell("on_unknown_outcome", event)

    def _decide(self, outcome: AttemptOutcome) -> Decision | None:
        """The decision about one outcome, before the budget's say; None for a success."""
        guard = self.guard
        self.attempt += 1
        error = None
        if outcome.exc is not None:
            error = normalize(outcome.exc, limits=guard.policy.limits, operation=self.operation)
            if (
                error is not None
                and error.transport is TransportFailure.UNKNOWN
                and error.kind is ErrorKind.TRANSPORT
            ):
                # Not a call error: a bug or a cancellation. It propagates as it is.
                self._verdict(Verdict.ABANDONED)
                raise outcome.exc
            if isinstance(outcome.exc, AttemptCutShortError):
                self.cut_short = True
        elif (
            outcome.value is not None
            and not isinstance(outcome.value, _PLAIN)
            and (self.plain is None or not self.plain(outcome.value))
        ):
            # Responses, JSON bodies and statuses are judged; plain text a function returns
            # is its result, not a body to parse (nor what the caller says needs no judging).
            if self.describe is not None and getattr(outcome.value, "is_error", False):
                self._know()  # an error status is read against the operation it answers
            error = normalize(outcome.value, limits=guard.policy.limits, operation=self.operation)
        if error is None:
            self._verdict(Verdict.HEALTHY)
            self._succeeded(outcome.value)
            return None
        self._know()
        error = self._against_card(error)
        if error.reason is _MISMATCH:
            error = read_generation(error, self.operation, self.shape.generation_precondition)
        self._verdict(verdict_of(error), error)
        if error.delivery is Delivery.UNKNOWN:
            self.maybe_processed = True
        now = self.now = guard.clock()
        decision = guard.policy.decide(
            error,
            operation=self.operation,
            attempt=self.attempt,
            max_attempts=self.max_attempts,
            time_left=None if self.deadline_at is None else self.deadline_at - now,
            budget_left=None,
            draw=guard.random(),
            unsafe=self.unsafe,
        )
        if guard.override is not None:
            decision = self._override(decision, error, now)
        if not decision.will_retry and decision.action is not Action.RETRY:
            # The peer answered (a result, or a call error it meant): it is up.
            self.budget_now().credit()
        return decision

    def _against_card(self, error: CallError) -> CallError:
        """``error`` read against the agent's card, when one is known (see `CallShape.card`)."""
        shape = self.shape
        card = shape.card
        if callable(card):
            card = card()
        if card is None:
            card = self.guard.card_claims(self.peer)
        return read_against_card(error, card, self.operation, asks_push=shape.asks_push)

    def _settle(self, decision: Decision) -> bool:
        """Record ``decision`` and tell the hooks; True when a retry follows."""
        guard = self.guard
        now = self.now
        self.decision = decision
        self.delay = decision.delay or 0.0
        observers = guard.observers
        if observers["on_decision"]:
            observers.tell("on_decision", self._event(decision, now))
        if decision.will_retry:
            if observers["on_retry"]:
                observers.tell("on_retry", self._event(decision, now))
            return True
        if decision.give_up is GiveUp.BUDGET and observers["on_budget_exhausted"]:
            observers.tell("on_budget_exhausted", self._event(decision, now))
        return False

    def _refreshes(self) -> bool:
        """Whether the credentials are refreshed and the call tried once more (once a call)."""
        decision = self.decision
        if (
            decision is not None
            and decision.action is Action.AUTH
            and self.guard.refresh_credentials is not None
            and not self.refreshed
            and self.attempt < self.max_attempts + 1
        ):
            self.refreshed = True
            return True
        return False

    def _know(self) -> None:
        """Learn the operation and the resend safety, when the caller left them for later."""
        describe = self.describe
        if describe is not None:
            self.describe = None
            shape = self.shape = describe()
            self.operation, self.unsafe = shape.operation, shape.unsafe

    def budget_now(self) -> RetryBudgetLike:
        """The peer's budget, looked up once per call."""
        budget = self.budget
        if budget is None:
            budget = self.budget = self.guard.budget_for(self.peer)
        return budget

    def _succeeded(self, value: Any) -> None:
        """The call returned a result: the fast path (no retry to plan, nothing to raise)."""
        guard = self.guard
        self.budget_now().credit()
        observers = guard.observers
        if observers["on_decision"]:
            self._know()
            decision = Decision(Action.OK, operation=self.operation, attempt=self.attempt)
            self.decision = decision
            observers.tell("on_decision", self._event(decision, guard.clock()))
        else:
            self.decision = _OK
        answered = self.shape.answered
        if answered is not None:
            tell_one(answered, "answered", value)
        if (observers["on_call"] or _RECORDING.get() is not None) and not self.holds_end:
            self.end()

    def _override(self, decision: Decision, error: CallError, now: float) -> Decision:
        guard = self.guard
        assert guard.override is not None  # noqa: S101 (called only when set)
        try:
            chosen = guard.override(decision)
        except Exception:
            _log.exception("a2a_client_errors: decision override failed; keeping the decision")
            return decision
        if chosen is None or Action(chosen) is decision.action:
            return decision
        return guard.policy.decide(
            error,
            operation=self.operation,
            attempt=self.attempt,
            max_attempts=self.max_attempts,
            time_left=None if self.deadline_at is None else self.deadline_at - now,
            draw=guard.random(),
            unsafe=self.unsafe,
            action=Action(chosen),
        )

    def end(self, *, interface: str | None = None) -> CallRecord:
        """The call's record, made once when it ends and told to ``on_call`` and `recording`.

        For doors: a success handed back without the engine's judging (a plain success) is
        ended here too, when its record is wanted.
        """
        record = self.record
        if record is not None:
            if not self.told_end:
                self._tell_end(record)
            return record
        self._unsent()
        guard = self.guard
        decision = self.decision
        operation: Callable[[], str | None] | None = None
        if decision is None or decision.action is Action.OK:
            pending = self.describe
            if pending is None:
                decision = Decision(Action.OK, operation=self.operation, attempt=self.attempt)
            else:  # a success that never needed its shape: its operation is read if asked
                decision = _OK

                def operation() -> str | None:
                    return pending().operation

            interface = interface or self.peer
        record = self.record = CallRecord(
            decision,
            self.peer,
            self.operation,
            self.moved + self.attempt,
            guard.clock() - self.start,
            maybe_processed=self.maybe_processed,
            resolution=self.told,
            cut_short=self.cut_short,
            interface=interface,
            describe=operation,
        )
        self._tell_end(record)
        return record

    def _tell_end(self, record: CallRecord) -> None:
        self.told_end = True
        tell_record(self.guard.observers, record)

    def finish(self, outcome: AttemptOutcome) -> Any:
        """Return the result of an ``ok`` call, or raise the failure its decision names."""
        decision = self.decision
        assert decision is not None  # noqa: S101 (judged)
        if decision.action is Action.OK:
            if not self.holds_end:
                self.end()
            return outcome.value
        guard = self.guard
        goes_on = (
            self.shape.failover
            and self.fail_over is None
            and (outcome.refused is not None or decision.give_up is GiveUp.FAILOVER)
        )
        if not goes_on:
            if guard.observers["on_give_up"]:
                guard.observers.tell("on_give_up", self._event(decision, guard.clock()))
            record = self.end()
        else:
            record = None  # the call goes on over the agent's next interface
        failure: CallFailed
        if outcome.refused is not None:
            admission = outcome.refused
            failure = PeerUnavailable(
                decision,
                attempts=self.attempt,
                maybe_processed=self.maybe_processed,
                peer=self.peer,
                state=admission.state,
                retry_in=admission.retry_in,
            )
        elif decision.give_up is GiveUp.OUTCOME_UNKNOWN:
            failure = OutcomeUnknown(
                decision,
                attempts=self.attempt,
                result=outcome.value,
                sent=self.shape.sent,
                why=self.why,
            )
        else:
            failure = failure_for(decision)(
                decision,
                attempts=self.attempt,
                result=outcome.value,
                maybe_processed=self.maybe_processed,
            )
        failure.record = record
        raise failure from _ended_by(outcome.exc)

    def _event(self, decision: Decision, now: float) -> GuardEvent:
        budget = self.budget
        return GuardEvent(
            decision=decision,
            peer=self.peer,
            operation=self.operation,
            attempt=self.attempt,
            elapsed=now - self.start,
            budget_tokens=None if budget is None else budget.tokens,
        )


def _since(guard: Configured, held_until: float) -> float:
    """Seconds since a recorded send was last held (the latest its sender could have sent)."""
    return guard.exactly_once.wall_clock() - held_until


def _read_task(task_id: str) -> Generator[Query, Any, LookupResult]:
    """Read the task a journal's record holds: `Found`, or `Unresolved` when it cannot be."""
    task = yield GetTaskQuery(task_id)
    if task is None or isinstance(task, Unanswered):
        return Unresolved(f"task {task_id!r} could not be read back")
    return Found(task)


def _searched(reader: TaskReader, result: LookupResult) -> LookupResult:
    """The search's result as the look-up's: "not there" only where the message went."""
    if isinstance(result, Found):
        return Found(reader.found(result.value))
    if reader.elsewhere:
        if isinstance(result, NotFound):
            return _ELSEWHERE
        if isinstance(result, Unresolved):
            return Unresolved(f"{result.why}; {_ELSEWHERE.why}")
    return result


def _moves_on(decision: Decision) -> bool:
    """Whether a failure sends the call to the agent's next interface: a retry of nothing sent."""
    return decision.action is Action.RETRY and decision.delivery is Delivery.NOT_SENT


NO_KWARGS: Final[dict[str, Any]] = {}
"""The keyword arguments of an attempt without any (never written to)."""


def never_sent(*args: object, **kwargs: object) -> Any:
    """The attempt of a call that must never send (a recovery): a bug if ever made."""
    msg = "a recovery never sends"
    raise AssertionError(msg)


def attempt_once(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AttemptOutcome:
    """Call ``fn`` once: its value or the exception it raised (an awaitable: `TypeError`)."""
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:  # every failure is judged; non-call errors are re-raised there
        return AttemptOutcome(exc=exc)
    refuse_awaitable(value, "Guard.call() got an awaitable from fn: use `await guard.acall(...)`")
    return AttemptOutcome(value=value)


async def _aattempt(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    timeout: float | None = None,
) -> AttemptOutcome:
    try:
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await (value if timeout is None else _within(value, timeout))
    except Exception as exc:  # every failure is judged; non-call errors are re-raised there
        return AttemptOutcome(exc=exc)
    return AttemptOutcome(value=value)


async def aattempt_once(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> AttemptOutcome:
    """`attempt_once`, awaiting what ``fn`` returns (cut short after ``timeout`` seconds)."""
    return await _aattempt(fn, args, kwargs if kwargs is not None else NO_KWARGS, timeout)


async def _within(awaitable: Awaitable[Any], timeout: float) -> Any:
    """Await ``awaitable`` for at most ``timeout`` seconds (then `AttemptCutShortError`)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError as exc:
        msg = "the call's deadline cut the attempt short"
        raise AttemptCutShortError(msg) from exc


def refuse_awaitable(value: object, message: str) -> None:
    """Sync code got an awaitable: close it (no "never awaited" warning) and say what to use."""
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if callable(close):
            close()
        raise TypeError(message)


def _sync_result(value: object) -> bool:
    refuse_awaitable(
        value, "refresh_credentials returned an awaitable: use acall(), or a sync refresh"
    )
    return bool(value)


async def _async_result(value: object) -> bool:
    if inspect.isawaitable(value):
        value = await value
    return bool(value)


async def _in_thread(effect: Record) -> Any:
    """``effect.op()`` in a worker thread; a cancellation meanwhile hands its result to undo."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, contextvars.copy_context().run, effect.op)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        undo = effect.undo
        if undo is not None:

            def undone(done: asyncio.Future[Any]) -> None:
                if not done.cancelled() and done.exception() is None:
                    loop.run_in_executor(None, undo, done.result())

            future.add_done_callback(undone)
        raise


def _ended_by(exc: BaseException | None) -> BaseException | None:
    """What a failure is chained from: the exception that ended the last attempt.

    A door that read the answer itself raises `PeerAnswerError` from the client library's
    own exception: that one is the cause the caller sees (the call error judged is the
    answer's either way); a `PeerAnswerError` with no cause (the library raised nothing) is.
    """
    if isinstance(exc, PeerAnswerError) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


# --- the drivers ------------------------------------------------------------------------------

Send: TypeAlias = "tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]"
"""An attempt: ``fn(*args, **kwargs)``."""
_NOTHING_TO_SEND: Final[Send] = (never_sent, (), NO_KWARGS)


def drive(
    steps: Generator[Effect, Any, R],
    guard: Configured,
    peer: str,
    call: GuardedCall | None = None,
    send: Send = _NOTHING_TO_SEND,
    *,
    effect: Effect | None = None,
) -> R:
    """Carry out ``steps``' effects with sync I/O; return what it returns.

    The one sync driver: a call's steps (``call`` is the call, ``send`` its attempt) or a
    door's reads (`Configured.reads`, with no call). What carrying out an effect raises is
    thrown into ``steps``, but a read's failure, which is sent as `Failed`. ``effect`` is
    the first effect of ``steps`` when the caller already took it.
    """
    fn, args, kwargs = send
    try:
        if effect is None:
            effect = next(steps)
        while True:
            try:
                if isinstance(effect, Attempt):
                    reply: Any = attempt_once(fn, args, kwargs)
                elif isinstance(effect, Ask):
                    reply = _ask(effect)
                elif isinstance(effect, Sleep):
                    guard.sleep(effect.seconds)
                    reply = None
                elif isinstance(effect, MayRead):
                    reply = guard.allowance_for(peer).open()
                elif isinstance(effect, Charge):
                    guard.allowance_for(peer).charge()
                    reply = None
                elif isinstance(effect, Record):
                    reply = effect.op()
                elif effect is SPEND:
                    reply = call.budget_now().try_spend()  # type: ignore[union-attr]
                elif isinstance(effect, Look):
                    reply = _look(effect, guard)
                elif isinstance(effect, Resolve):
                    reply = effect.value
                elif isinstance(effect, FailOver):
                    reply = call._onward(effect)  # type: ignore[union-attr]
                    refuse_awaitable(reply, "a fail_over that returns an awaitable needs arun()")
                    if reply is not None:
                        fn, args, kwargs = reply.fn, reply.args, reply.kwargs or NO_KWARGS
                        peer = reply.peer  # the call goes on over the next interface
                elif isinstance(effect, Refresh):
                    reply = _sync_result(guard.refresh_credentials(effect.decision))  # type: ignore[misc]
                elif effect is ADMIT:
                    reply = guard.breaker.admit(peer)  # type: ignore[union-attr]
                else:
                    reply = None  # YIELD: no loop to yield to
            except BaseException as exc:
                effect = steps.throw(exc)
                continue
            effect = steps.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(
    steps: Generator[Effect, Any, R],
    guard: Configured,
    peer: str,
    call: GuardedCall | None = None,
    send: Send = _NOTHING_TO_SEND,
    *,
    effect: Effect | None = None,
) -> R:
    """`drive`, awaiting what returns awaitables; the deadline cuts an attempt in flight."""
    fn, args, kwargs = send
    try:
        if effect is None:
            effect = next(steps)
        while True:
            try:
                if isinstance(effect, Attempt):
                    reply: Any = await _aattempt(fn, args, kwargs, effect.timeout)
                elif isinstance(effect, Ask):
                    reply = await _aask(effect)
                elif isinstance(effect, Sleep):
                    await guard.asleep(effect.seconds)
                    reply = None
                elif isinstance(effect, MayRead):
                    reply = guard.allowance_for(peer).open()
                elif isinstance(effect, Charge):
                    guard.allowance_for(peer).charge()
                    reply = None
                elif isinstance(effect, Record):
                    reply = await _in_thread(effect)
                elif effect is SPEND:
                    budget = call.budget_now()  # type: ignore[union-attr]
                    reply = await _awaited(
                        budget.atry_spend() if spends_async(budget) else budget.try_spend()
                    )
                elif isinstance(effect, Look):
                    reply = await _alook(effect, guard)
                elif isinstance(effect, Resolve):
                    reply = await _awaited(effect.value)
                elif isinstance(effect, FailOver):
                    reply = await _awaited(call._onward(effect))  # type: ignore[union-attr]
                    if reply is not None:
                        fn, args, kwargs = reply.fn, reply.args, reply.kwargs or NO_KWARGS
                        peer = reply.peer  # the call goes on over the next interface
                elif isinstance(effect, Refresh):
                    reply = await _async_result(guard.refresh_credentials(effect.decision))  # type: ignore[misc]
                elif effect is ADMIT:
                    reply = await call._aadmit()  # type: ignore[union-attr]
                else:
                    await asyncio.sleep(0)  # YIELD
                    reply = None
            except BaseException as exc:
                effect = steps.throw(exc)
                continue
            effect = steps.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def _awaited(value: Any) -> Any:
    """``value``, awaited when it is an awaitable."""
    return (await value) if inspect.isawaitable(value) else value


def _ask(effect: Ask) -> Any:
    """One read: its answer, or `Failed` (judged by the reads: retried, or the end)."""
    try:
        return effect.ask(effect.query, effect.timeout)  # type: ignore[misc]
    except Exception as exc:
        return Failed(exc)


async def _aask(effect: Ask) -> Any:
    """`_ask`, awaiting the answer."""
    try:
        answer = effect.ask(effect.query, effect.timeout)  # type: ignore[misc]
        return (await answer) if inspect.isawaitable(answer) else answer
    except Exception as exc:
        return Failed(exc)


def _look(effect: Look, guard: Configured) -> LookupResult:
    """A look-up that is a plain callable, given the seconds left; a failure is `Unresolved`."""
    try:
        result = effect.lookup(effect.until - guard.clock())
    except Exception as exc:  # a look-up that fails could not look
        return Unresolved(f"the look-up failed ({type(exc).__name__})")
    # Misuse, not a failed look: said to the caller, as for ``fn``.
    refuse_awaitable(result, "a Guard.call() look-up returned an awaitable: use acall()")
    return result  # type: ignore[no-any-return]


async def _alook(effect: Look, guard: Configured) -> LookupResult:
    """`_look`, awaited within the seconds left."""
    time_left = effect.until - guard.clock()
    try:
        looked = effect.lookup(time_left)
        if inspect.isawaitable(looked):
            return await asyncio.wait_for(looked, time_left)
        return looked  # type: ignore[no-any-return]
    except asyncio.TimeoutError:
        return Unresolved("the look-up did not finish in time")
    except Exception as exc:  # a look-up that fails could not look
        return Unresolved(f"the look-up failed ({type(exc).__name__})")

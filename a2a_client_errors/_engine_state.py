"""A guarded call's state, and the vocabulary the engine's parts share.

`CallState` holds everything one guarded call knows (its slots, declared once here), made
fresh by `Guard.begin` and shared by nothing, and the few steps every part reads it with:
learning the call's shape (`CallState.know`), its peer's budget, the events the hooks are
told, and how the call ends (`CallState.end`, its `CallRecord`; `CallState.finish`, its value
or its `CallFailed`). The decision core (`a2a_client_errors._engine_decide`) and the journal's
steps (`a2a_client_errors._engine_journal`) are built on it, and `GuardedCall`
(`a2a_client_errors._engine`) on them.

Beside it, what those parts and the doors share: what a call is (`CallShape`), what an
attempt produced (`AttemptOutcome`), where a call goes on (`Onward`), the two effects that
carry a decision (`FailOver`, `Refresh`), what the engine reads of its `Guard`
(`Configured`), the failure a decision names (`failure_for`), and the records a caller
collects (`recording`).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar

from a2a_client_errors._failures import (
    AuthFailed,
    BudgetExhausted,
    CallFailed,
    DeadlineExceeded,
    DegradeNeeded,
    FixRequestNeeded,
    OutcomeUnknown,
    PeerUnavailable,
    ReconcileNeeded,
    ReportNeeded,
    RetryAfterTooLong,
    RetryExhausted,
)
from a2a_client_errors._lookup import READERS, WORK_OPERATIONS, ReadSteps, Resolution, TaskReader
from a2a_client_errors._normalize import PeerAnswerError
from a2a_client_errors._policy import Decision, GiveUp, succeeded
from a2a_client_errors._reasons import Action
from a2a_client_errors.hooks import CallRecord, GuardEvent, UnknownOutcomeEvent

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator, Iterator

    from a2a_client_errors._breaker import Admission, CircuitBreakerLike
    from a2a_client_errors._card_claims import CardClaims
    from a2a_client_errors._effects import Effect as MachineEffect
    from a2a_client_errors._journal import Entry, Journal, JournalRecord, LeaseKeeper, Made
    from a2a_client_errors._lookup import (
        AgentFacts,
        Asking,
        CardQuery,
        ExactlyOnce,
        GetTaskQuery,
        ListTasksQuery,
        LookupAllowance,
        LookupResult,
        Query,
        SentMessage,
    )
    from a2a_client_errors._policy import Policy
    from a2a_client_errors._retry import RetryBudgetLike
    from a2a_client_errors.hooks import Observers

__all__ = [
    "NO_SHAPE",
    "RECORDING",
    "SUCCESS",
    "TESTING",
    "AttemptCutShortError",
    "AttemptOutcome",
    "CallShape",
    "CallState",
    "Configured",
    "Effect",
    "FailOver",
    "Lookup",
    "Onward",
    "Refresh",
    "failure_for",
    "plain_success",
    "recording",
    "switch_testing",
    "tell_record",
]


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
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any] | None,
        *,
        agent: str,
        deadline_at: float | None = None,
        wait: bool = False,
        steps: Asking | None = None,
    ) -> Generator[Effect, Any, R]: ...


Lookup: TypeAlias = (
    "TaskReader | ReadSteps | Callable[[float | None], LookupResult | Awaitable[LookupResult]]"
)
"""A look-up for what an attempt with an unknown outcome made.

A `TaskReader` (how to ask one GetTask or ListTasks of the agent; or a door's `ReadSteps`, the
same reads as effects the engine carries out through the door's sender): the Guard runs the
search (`a2a_client_errors._lookup.find_sent`) with it, each read retried as any read, paid for from
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

RECORDING: Final[contextvars.ContextVar[list[CallRecord] | None]] = contextvars.ContextVar(
    "a2a_client_errors_recording", default=None
)
"""The records of the active `recording`, if one is."""


def tell_record(observers: Observers, record: CallRecord) -> None:
    """Tell a call's end: to the hooks' ``on_call``, and to an active `recording`."""
    if observers["on_call"]:
        observers.tell("on_call", record)
    recorded = RECORDING.get()
    if recorded is not None:
        recorded.append(record)


def plain_success(
    guard: Configured, peer: str, start: float, operation: Callable[[], str | None]
) -> CallRecord:
    """The record of a success a door judged itself (its fast path), told as any call's end.

    One attempt, served by ``peer``; ``operation`` is read only when the record is asked.
    """
    record = CallRecord(
        SUCCESS, peer, None, 1, guard.clock() - start, interface=peer, describe=operation
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
        self._token = RECORDING.set(self.calls)
        return self.calls

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            RECORDING.reset(self._token)
            self._token = None

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(self.calls)


R = TypeVar("R")
SUCCESS: Final = Decision(Action.OK)
"""The decision of a success told without its shape (no operation, no attempt)."""
TESTING: Final[dict[str, Any]] = {"on": False, "attempts": None}
"""The testing switch (`a2a_client_errors.testing.set_testing`): no sleeps, fewer attempts."""


def switch_testing(on: bool, attempts: int | None) -> tuple[bool, int | None]:
    """Set the testing switch; returns what it was (for `a2a_client_errors.testing`)."""
    previous = (TESTING["on"], TESTING["attempts"])
    TESTING["on"], TESTING["attempts"] = on, attempts
    return previous


# --- one call's state -------------------------------------------------------------------------


class CallState:
    """One guarded call's state: what it is, where it stands, and how it ends.

    The slots of every part of a `GuardedCall` (the decision core and the journal's steps
    add none): made fresh per call by `Guard.begin`, shared by nothing. After the call
    ended, ``record`` is its `CallRecord`.
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
        # A resend the look-up allowed, told to the hooks when it goes out (`attempting`), and
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

    def know(self) -> None:
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

    def agent_key(self) -> str:
        """The key what is learnt of the agent is kept under (`AgentFacts`)."""
        lookup = self.shape.lookup
        return lookup.agent if isinstance(lookup, READERS) else self.peer

    def event_for(self, decision: Decision, now: float) -> GuardEvent:
        """The hooks' event of ``decision``, taken at ``now`` (by the Guard's clock)."""
        budget = self.budget
        return GuardEvent(  # by position (a third cheaper): every success a hook observes
            decision,
            self.peer,
            self.operation,
            self.attempt,
            now - self.start,
            None if budget is None else budget.tokens,
        )

    def tell_unknown(self, decision: Decision) -> None:
        """Tell the hooks how the unknown outcome ended (``resolution``), after ``decision``."""
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
                decision = succeeded(self.operation, self.attempt)
            else:  # a success that never needed its shape: its operation is read if asked
                decision = SUCCESS

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
            self.tell_unknown(self.decision or SUCCESS)
        self.resolution = None

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
                guard.observers.tell("on_give_up", self.event_for(decision, guard.clock()))
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


def _ended_by(exc: BaseException | None) -> BaseException | None:
    """What a failure is chained from: the exception that ended the last attempt.

    A door that read the answer itself raises `PeerAnswerError` from the client library's
    own exception: that one is the cause the caller sees (the call error judged is the
    answer's either way); a `PeerAnswerError` with no cause (the library raised nothing) is.
    """
    if isinstance(exc, PeerAnswerError) and exc.__cause__ is not None:
        return exc.__cause__
    return exc

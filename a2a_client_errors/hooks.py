"""What a Guard tells its observers: `Hook`, the event records, and each call's `CallRecord`.

Hooks see; they never change an outcome. A Guard tells each event to the hooks that override
the method (`Observers`), and costs nothing for the methods none overrides. Events never hold a
request body or credentials.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._breaker import BreakerFallback, BreakerTransition
from a2a_client_errors._policy import Decision, GiveUp
from a2a_client_errors._reasons import Action
from a2a_client_errors._retry import BudgetFallback

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from a2a_client_errors._lookup import Resolution, SentMessage
    from a2a_client_errors._outcomes import TaskOutcome
    from a2a_client_errors._reasons import Delivery

__all__ = [
    "GAVE_UP",
    "BreakerFallback",
    "BreakerTransition",
    "BudgetFallback",
    "CallRecord",
    "FailoverEvent",
    "GuardEvent",
    "Hook",
    "JournalEvent",
    "Observers",
    "TaskOutcomeEvent",
    "UnknownOutcomeEvent",
    "first_time",
]

_log = logging.getLogger("a2a_client_errors")


@dataclass(frozen=True, slots=True)
class GuardEvent:
    """What a hook is told. It never holds a request body or credentials.

    Attributes:
        decision: the decision made (its ``error`` holds what the peer said).
        peer: the peer's key (``"https://agent.example:443"``, or the ``peer=`` given).
        operation: the A2A operation, if known.
        attempt: the attempt the decision is about (1 for the first).
        elapsed: seconds since the call started (by the Guard's clock).
        budget_tokens: the peer's retry tokens left, if it has a budget.

    """

    decision: Decision
    peer: str
    operation: str | None
    attempt: int
    elapsed: float
    budget_tokens: float | None


class Hook:
    """Observers of a Guard's decisions. Subclass and override what you need.

    Hooks see; they never change the outcome. An exception raised by a hook is logged and
    swallowed. (To change a decision, pass ``override=`` to the Guard.)
    """

    def on_decision(self, event: GuardEvent) -> None:
        """Every decision, ``ok`` included."""

    def on_retry(self, event: GuardEvent) -> None:
        """A retry was scheduled; ``event.decision.delay`` is the sleep before it."""

    def on_give_up(self, event: GuardEvent) -> None:
        """The call ended in a decision other than ``ok``."""

    def on_call(self, record: CallRecord) -> None:
        """A call ended, well or not: its one record (see `CallRecord`), told once per call.

        Count calls and log their ends from here: a call that fails is told here once, however
        it ended (a give-up, a breaker's refusal, a stream given up after its resubscriptions).
        """

    def on_budget_exhausted(self, event: GuardEvent) -> None:
        """A retry was refused by the peer's budget."""

    def on_budget_fallback(self, event: BudgetFallback) -> None:
        """A peer's shared budget fell back to a local bucket, or recovered (``event.state``).

        Told by budgets on a shared store (`RedisRetryBudget`) when the store is slow or down
        and when it answers again, from whichever thread noticed.
        """

    def on_breaker(self, event: BreakerTransition) -> None:
        """A peer's circuit breaker changed state (``event.old`` to ``event.new``).

        Told by the Guard's breaker (`CircuitBreaker`, `RedisCircuitBreaker`), from whichever
        call or thread made the change.
        """

    def on_breaker_fallback(self, event: BreakerFallback) -> None:
        """A peer's shared breaker (`RedisCircuitBreaker`) decides locally, or is shared again.

        Told as `on_budget_fallback` is for a shared budget: when the store is slow or down,
        and when it answers again.
        """

    def on_peer_unavailable(self, event: GuardEvent) -> None:
        """A call failed fast: the peer's breaker is open (nothing was sent).

        ``event.decision.retry_after`` is the time until the next probe may go.
        """

    def on_unknown_outcome(self, event: UnknownOutcomeEvent) -> None:
        """An attempt of a call that creates work may have been processed; told how it ended.

        ``event.resolution`` says: the task was found (the answer; nothing resent), absent by
        a declared listing contract (resent, or not), not found by the end of the look-up
        (`OutcomeUnknown`), or the peer deduplicates the resend (resent at once).

        A resend (``resent``, ``deduplicating``) is told as it goes out, once its breaker let
        it go, never at the look-up's verdict: a call that ends before it (the breaker open,
        the deadline too near) tells ``not_found`` instead (``deduplicating``: nothing).
        """

    def on_failover(self, event: FailoverEvent) -> None:
        """A call moved from one interface of the agent to the next (nothing sent on the first).

        Told by the guarded a2a-sdk client when the agent card lists several interfaces: the
        first was not reached (``event.why`` ``"not_sent"``) or its breaker is open
        (``"breaker_open"``). Which interface served a call is ``event.peer`` of its ``ok``
        `on_decision`.
        """

    def on_journal(self, event: JournalEvent) -> None:
        """A step of a journaled send (`a2a_client_errors.journal`), named by ``event.kind``.

        Recorded, closed, waited for, taken over, replayed, or failed. Never a body, never
        credentials.
        """

    # --- task outcomes: results of successful calls, kept apart from call errors ------------

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """A task came back in a successful call (a result: FAILED is not a call error).

        Told by the guarded a2a-sdk client for each task state it sees become final (once per
        task and state), and by `Guard.record_task` for tasks received by other means.
        """


HOOK_METHODS: Final = (
    "on_decision",
    "on_call",
    "on_retry",
    "on_give_up",
    "on_budget_exhausted",
    "on_budget_fallback",
    "on_breaker",
    "on_breaker_fallback",
    "on_peer_unavailable",
    "on_unknown_outcome",
    "on_failover",
    "on_journal",
)
HOOK_METHODS_ALL: Final = (*HOOK_METHODS, "on_task_outcome")
"""Every method of `Hook` a Guard tells (``on_task_outcome`` included)."""


@dataclass(frozen=True, slots=True)
class TaskOutcomeEvent:
    """What `Hook.on_task_outcome` is told: a task that came back, and what its state means.

    Kept apart from `GuardEvent` on purpose: a task in FAILED or REJECTED is the agent's
    answer to a call that succeeded, not a protocol error, and belongs in its own metrics.

    Attributes:
        outcome: the task's state and what it means (`TaskOutcome`).
        peer: the peer's key (as in `GuardEvent`).
        operation: the A2A operation that returned the task, if known.
        skill: the skill the task was sent to, when the caller said (A2A tasks do not carry
            one); None when unknown.

    """

    outcome: TaskOutcome
    peer: str
    operation: str | None
    skill: str | None


@dataclass(frozen=True, slots=True)
class UnknownOutcomeEvent:
    """What `Hook.on_unknown_outcome` is told. It never holds a message's content.

    Attributes:
        decision: the decision about the attempt whose outcome was unknown.
        resolution: how it was resolved (`Resolution`).
        peer: the peer's key (as in `GuardEvent`).
        operation: the A2A operation (SendMessage, SendStreamingMessage, or None for a batch).
        attempt: the attempt whose outcome was unknown (1 for the first).
        elapsed: seconds since the call started, the look-up included.
        sent: the message's identity (messageId, contextId, taskId), when known.
        why: for ``unresolved``: what stood in the way of the look-up.

    """

    decision: Decision
    resolution: Resolution
    peer: str
    operation: str | None
    attempt: int
    elapsed: float
    sent: SentMessage | None
    why: str = ""


JOURNAL_KINDS: Final = (
    "recorded",
    "settled",
    "released",
    "waited",
    "took_over",
    "replayed",
    "mismatch",
    "recovered",
    "failed",
)
"""What `JournalEvent.kind` may be."""


@dataclass(frozen=True, slots=True)
class JournalEvent:
    """What `Hook.on_journal` is told: one step of a journaled send.

    Attributes:
        kind: ``recorded`` (claimed before its first byte), ``settled`` (closed with its
            end), ``released`` (left open, its outcome unknown), ``waited`` (another live
            process sends it), ``took_over`` (its sender was gone), ``replayed`` (sent
            before: its recorded answer handed back), ``mismatch`` (another body), ``recovered``
            (`Guard.recover` closed it), ``failed`` (the journal could not be written).
        message_id: the send's messageId.
        peer: the peer's key.
        state: the record's state after the step (``open``, ``task``, ``message``,
            ``refused``), None when the journal failed before one was read.
        why: what the journal said, for ``failed``; the record's note otherwise.

    """

    kind: str
    message_id: str
    peer: str
    state: str | None
    why: str = ""


@dataclass(frozen=True, slots=True)
class FailoverEvent:
    """What `Hook.on_failover` is told: a call leaves one interface of the agent for the next.

    Attributes:
        decision: why it left: the not-sent failure (give-up ``failover``), or the open
            breaker's refusal (give-up ``peer_unavailable``).
        peer: the key of the interface left (its budget's and breaker's).
        to: the key of the interface the call goes to.
        operation: the A2A operation.

    """

    decision: Decision
    peer: str
    to: str
    operation: str | None

    @property
    def why(self) -> str:
        """``"breaker_open"`` (nothing was tried) or ``"not_sent"`` (tried, nothing reached it)."""
        if self.decision.give_up is GiveUp.PEER_UNAVAILABLE:
            return "breaker_open"
        return "not_sent"


GAVE_UP: Final = "gave_up"
"""`CallRecord.outcome` of a call that gave up: a retry the policy wanted did not happen."""


class CallRecord:
    """One call, told once when it ends: to the hooks (`Hook.on_call`), and to the caller.

    The caller reads it on a failure as ``CallFailed.record``, on a success where the door
    puts it: an httpx response's ``extensions["a2a_call"]`` (the transports), or
    `a2a_client_errors.recording` for every door. Read-only.

    Attributes:
        decision: the call's final decision (``ok`` for a success).
        peer: the key of the peer (for a call that moved between an agent's interfaces, the
            interface it ended on).
        operation: the A2A operation, if known.
        attempts: the attempts made (0: none was sent, e.g. a breaker refused the call).
        duration: seconds from the call's start to its end, by the Guard's clock.
        maybe_processed: whether an attempt may have been processed by the agent (its
            delivery was unknown).
        resolution: how an unknown outcome was resolved by a look-up (`Resolution`), if one
            was needed.
        cut_short: whether the call's deadline cut an attempt in flight.
        interface: the interface that served a successful call (its key); None for a failure.

    """

    __slots__ = (
        "_describe",
        "_operation",
        "attempts",
        "cut_short",
        "decision",
        "duration",
        "interface",
        "maybe_processed",
        "peer",
        "resolution",
    )

    def __init__(
        self,
        decision: Decision,
        peer: str,
        operation: str | None,
        attempts: int,
        duration: float,
        *,
        maybe_processed: bool = False,
        resolution: Resolution | None = None,
        cut_short: bool = False,
        interface: str | None = None,
        describe: Callable[[], str | None] | None = None,
    ) -> None:
        self.decision = decision
        self.peer = peer
        self._operation = operation
        self._describe = describe  # the operation, learnt when first asked (a door's success)
        self.attempts = attempts
        self.duration = duration
        self.maybe_processed = maybe_processed
        self.resolution = resolution
        self.cut_short = cut_short
        self.interface = interface

    @property
    def operation(self) -> str | None:
        """The A2A operation, if known."""
        describe = self._describe
        if describe is not None:
            self._describe = None
            self._operation = describe()
        return self._operation

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.decision.action is Action.OK

    @property
    def outcome(self) -> str:
        """How the call ended: ``"ok"``, ``"gave_up"``, or the action of its final decision.

        ``"gave_up"``: it ended on a retry that did not happen (``decision.give_up`` says
        why). Else the action (``"reconcile"``, ``"auth"``, ...); never ``"retry"``.
        """
        decision = self.decision
        action: str = decision.action.value
        return GAVE_UP if decision.give_up is not None or action == Action.RETRY else action

    @property
    def delivery(self) -> Delivery | None:
        """The final decision's delivery verdict (None for a success)."""
        return None if self.ok else self.decision.delivery

    @property
    def refused(self) -> bool:
        """Whether an open breaker refused the call: nothing was sent, and it is no call error."""
        return self.decision.give_up is GiveUp.PEER_UNAVAILABLE and self.decision.error is None

    def _fields(self) -> tuple[object, ...]:
        return (
            self.decision,
            self.peer,
            self.operation,
            self.attempts,
            self.duration,
            self.maybe_processed,
            self.resolution,
            self.cut_short,
            self.interface,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallRecord):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        names = (
            "decision",
            "peer",
            "operation",
            "attempts",
            "duration",
            "maybe_processed",
            "resolution",
            "cut_short",
            "interface",
        )
        shown = ", ".join(
            f"{name}={value!r}" for name, value in zip(names, self._fields(), strict=True)
        )
        return f"CallRecord({shown})"


class Observers:
    """The hooks' overriding methods, by `Hook` method name: told in order, never raising.

    A name no hook overrides is an empty tuple, so a Guard asks ``observers[name]`` before it
    builds an event.
    """

    __slots__ = ("_by_name",)

    def __init__(self, hooks: Iterable[Hook]) -> None:
        hooks = tuple(hooks)
        self._by_name: dict[str, tuple[Callable[[Any], object], ...]] = {
            name: tuple(
                getattr(hook, name)
                for hook in hooks
                if callable(getattr(hook, name, None))
                and getattr(type(hook), name, None) is not getattr(Hook, name)
            )
            for name in HOOK_METHODS_ALL
        }

    def __getitem__(self, name: str) -> tuple[Callable[[Any], object], ...]:
        return self._by_name[name]

    def any(self) -> bool:
        """Whether any hook overrides any method."""
        return any(self._by_name.values())

    def tell(self, name: str, event: object) -> None:
        """Tell ``event`` to every hook method ``name``; what one raises is logged, not raised."""
        for observer in self._by_name[name]:
            tell_one(observer, name, event)

    def tell_once(self, name: str, event: object) -> None:
        """`tell`, skipping a hook that was told this very event already (by another Guard)."""
        for observer in self._by_name[name]:
            if first_time(getattr(observer, "__self__", observer), event, "hook"):
                tell_one(observer, name, event)


def tell_one(observer: Callable[[Any], object], name: str, event: object) -> None:
    """Tell one observer; what it raises is logged and swallowed (it never breaks a call)."""
    try:
        observer(event)
    except Exception:
        _log.exception("a2a_client_errors: hook %s failed", name)


_SEEN: Final[deque[tuple[str, object, object]]] = deque(maxlen=256)
_SEEN_LOCK: Final = threading.Lock()


def first_time(sink: object, event: object, kind: str = "sink") -> bool:
    """Whether ``sink`` (a hook, a metric family) meets ``event`` (the same object) first.

    A shared breaker or budget tells each change to every Guard that uses it; what several of
    those Guards share counts it once (a recent window of events, by identity). ``kind``
    keeps apart who asks (a Guard about a hook, a hook about its sink).
    """
    with _SEEN_LOCK:
        for seen_kind, seen_sink, seen in _SEEN:
            if seen is event and seen_sink is sink and seen_kind == kind:
                return False
        _SEEN.append((kind, sink, event))
    return True

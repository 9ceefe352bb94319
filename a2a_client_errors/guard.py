"""The Guard: run a call, decide about what came back, retry it or hand back a typed outcome.

The first attempt runs directly; when its outcome is a retry that may happen, tenacity runs
the rest of the loop (``tenacity.Retrying`` or ``AsyncRetrying``) with this module's decision
core as its ``retry``/``wait`` callbacks. The sync and async paths differ only in ``await``.
Each call gets a fresh `_Call` state: nothing mutable is shared between concurrent calls but
the (thread-safe) retry budgets. The Guard knows budgets through two protocols only
(`RetryBudgetLike`, `BudgetRegistryLike`); ``acall`` awaits a budget's ``atry_spend`` when it
has one, so a budget on a shared store never blocks the event loop. A retry's token is taken
when the retry is decided (a refused retry fails at once, without its sleep) and given back
(the budget's ``refund``) when the retry is never sent: a caller that gives up during the
backoff sleep (``asyncio.wait_for``, a cancellation, an interrupt) has spent nothing.

Every retry resends the *same* request: the same arguments to ``fn`` (so the same message and
messageId), and on the httpx path (`a2a_client_errors.transport`) the same bytes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random as _random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, overload

import tenacity

from a2a_client_errors.breaker import (
    Admission,
    BreakerFallback,
    BreakerTransition,
    CircuitBreakerLike,
    Verdict,
    verdict_of,
)
from a2a_client_errors.errors import CallError, ErrorKind
from a2a_client_errors.failures import (
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
from a2a_client_errors.lookup import (
    WORK_OPERATIONS,
    AgentFacts,
    CardQuery,
    Deduplicates,
    ExactlyOnce,
    Found,
    GetTaskQuery,
    ListTasksQuery,
    LookupResult,
    NotFound,
    Query,
    ReadFailedError,
    Resolution,
    SentMessage,
    TaskReader,
    Unresolved,
    adrive,
    card_says_deduplicates,
    drive,
    find_sent,
    reading,
)
from a2a_client_errors.normalize import normalize
from a2a_client_errors.outcomes import TaskOutcome, task_outcome
from a2a_client_errors.policy import Decision, GiveUp, Policy
from a2a_client_errors.reasons import Action, Delivery, TransportFailure
from a2a_client_errors.retry import (
    BudgetFallback,
    BudgetRegistry,
    BudgetRegistryLike,
    IdlePeers,
    RetryBudgetLike,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator, Iterable

__all__ = [
    "CallShape",
    "FailoverEvent",
    "Guard",
    "GuardEvent",
    "Hook",
    "Lookup",
    "TaskOutcomeEvent",
    "UnknownOutcomeEvent",
    "failure_for",
]

_log = logging.getLogger("a2a_client_errors")
T = TypeVar("T")
R = TypeVar("R")

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

        ``event.resolution`` says: the task was found (the answer; nothing resent), looked for
        and not there (resent, or not), could not be looked for (`OutcomeUnknown`), or the peer
        deduplicates (resent at once).
        """

    def on_failover(self, event: FailoverEvent) -> None:
        """A call moved from one interface of the agent to the next (nothing sent on the first).

        Told by the guarded a2a-sdk client when the agent card lists several interfaces: the
        first was not reached (``event.why`` ``"not_sent"``) or its breaker is open
        (``"breaker_open"``). Which interface served a call is ``event.peer`` of its ``ok``
        `on_decision`.
        """

    # --- task outcomes: results of successful calls, kept apart from call errors ------------

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """A task came back in a successful call (a result: FAILED is not a call error).

        Told by the guarded a2a-sdk client for each task state it sees become final (once per
        task and state), and by `Guard.record_task` for tasks received by other means.
        """


_HOOK_METHODS: Final = (
    "on_decision",
    "on_retry",
    "on_give_up",
    "on_budget_exhausted",
    "on_budget_fallback",
    "on_breaker",
    "on_breaker_fallback",
    "on_peer_unavailable",
    "on_unknown_outcome",
    "on_failover",
)
_TASK_HOOK_METHODS: Final = ("on_task_outcome",)


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


Lookup: TypeAlias = "TaskReader | Callable[[float | None], LookupResult | Awaitable[LookupResult]]"
"""A look-up for what an attempt with an unknown outcome made.

A `TaskReader` (how to ask one GetTask or ListTasks of the agent): the Guard runs the search
(`a2a_client_errors.lookup.find_sent`) with it, each read retried as any read, paid for from
the peer's budget and ended by the deadline. Or a function of your own: given the seconds it
may take (None: no bound), it returns `Found` (the call's answer), `NotFound` (absence
proven: a resend is safe) or `Unresolved`; it may be a coroutine function in ``acall``, and
what it raises counts as `Unresolved`. Either way the look-up is paid for with one retry
token of the peer's budget first (it is one more request caused by a failure): a spent
budget leaves it unmade (`Unresolved`)."""


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

    """

    operation: str | None = None
    unsafe: GiveUp | None = None
    creates_work: bool | None = None
    sent: SentMessage | None = None
    lookup: Lookup | None = None
    failover: bool = False
    answered: Callable[[Any], None] | None = None

    @property
    def makes_work(self) -> bool:
        """Whether the call may make a task (see ``creates_work``)."""
        if self.creates_work is not None:
            return self.creates_work
        return self.operation in WORK_OPERATIONS


_NO_SHAPE: Final = CallShape()
_LOOKED_UP: Final = frozenset({Action.RETRY, Action.REPORT})
# A call that could never be resent needs no look-up: its failure says so (maybe_processed).
_NEVER_RESENT: Final = frozenset(
    {GiveUp.NOT_REPLAYABLE, GiveUp.NO_MESSAGE_ID, GiveUp.STREAM_STARTED}
)
_NO_LOOKUP: Final = Unresolved("no look-up is known for this call")
_NO_TIME: Final = Unresolved("the deadline left no time to look")
_NO_BUDGET: Final = Unresolved("the retry budget is spent: no look-up was made")
_DEDUPLICATES: Final = Deduplicates()
_ELSEWHERE: Final = Unresolved(
    "not there on another interface of the agent, which may keep its own task store"
)


@dataclass(slots=True)
class _Outcome:
    """What one attempt produced: a value or an exception."""

    value: Any = None
    exc: BaseException | None = None
    refused: Admission | None = None


_TESTING: dict[str, Any] = {"on": False, "attempts": None}
_NO_KWARGS: Final[dict[str, Any]] = {}  # never written to: the arguments of a call without any
_PLAIN: Final = (str, bytes, bytearray, memoryview, int, float)
_OK: Final = Decision(Action.OK)


def _set_testing(on: bool, attempts: int | None) -> tuple[bool, int | None]:
    previous = (_TESTING["on"], _TESTING["attempts"])
    _TESTING["on"], _TESTING["attempts"] = on, attempts
    return previous


class Guard:
    """Run A2A calls under a policy: retry what is transient, hand back everything else.

    Args:
        policy: decides the action for each outcome and plans retries (default: the table's).
        budget: one budget for every peer (a `RetryBudgetLike`, such as `RetryBudget`), or a
            source of one budget per peer (a `BudgetRegistryLike`: `BudgetRegistry`,
            `RedisRetryBudget`). Default: a registry of this Guard, one `RetryBudget()` per
            peer. A source that can fall back (``subscribe``) tells this Guard's hooks
            (`Hook.on_budget_fallback`).
        max_attempts: attempts per call, the first included (3: two retries).
        deadline: seconds a call may take in all, across attempts (None: no deadline).
        hooks: observers of decisions (`Hook`).
        sleep: the sleep function (``time.sleep``; in ``acall``, ``asyncio.sleep``). A sleep
            that returns an awaitable is awaited in ``acall``.
        clock: a monotonic clock in seconds (``time.monotonic``).
        random: a source of uniform floats in ``[0, 1)`` for the jitter (``random.random``).
        refresh_credentials: called (once per call, at most) with the decision when the peer
            refuses the credentials; return True to try once more, False to give up. May be
            a coroutine function in ``acall``.
        override: the orchestrator's say: called with each decision, returns another `Action`
            to take instead, or None to keep it.
        exactly_once: how a call that creates work (SendMessage) makes an unknown outcome
            known before it resends (`ExactlyOnce`: the peers known to deduplicate, the
            look-up's pages, pause and time). Default: ``ExactlyOnce()``, no peer deduplicates.
        breaker: a circuit breaker per peer (a `CircuitBreakerLike`: `CircuitBreaker`,
            `RedisCircuitBreaker`), asked before every attempt: while a peer's is open, calls
            to it fail fast with `PeerUnavailable`, nothing sent. Default: None, no breaker.
            Share one between Guards to share what they learn; its changes of state are told
            to this Guard's hooks (`Hook.on_breaker`).

    Example:
        >>> from a2a_client_errors import Guard
        >>> guard = Guard(max_attempts=3, deadline=30.0)
        >>> guard.call(lambda: {"jsonrpc": "2.0", "id": 1, "result": {}}, operation="GetTask")
        {'jsonrpc': '2.0', 'id': 1, 'result': {}}

    """

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        budget: RetryBudgetLike | BudgetRegistryLike | None = None,
        max_attempts: int = 3,
        deadline: float | None = None,
        hooks: Iterable[Hook] = (),
        sleep: Callable[[float], object] | None = None,
        clock: Callable[[], float] | None = None,
        random: Callable[[], float] | None = None,
        refresh_credentials: Callable[[Decision], object] | None = None,
        override: Callable[[Decision], Action | None] | None = None,
        exactly_once: ExactlyOnce | None = None,
        breaker: CircuitBreakerLike | None = None,
    ) -> None:
        if max_attempts < 1:
            msg = "max_attempts must be at least 1"
            raise ValueError(msg)
        if deadline is not None and deadline <= 0:
            msg = "deadline must be positive (or None)"
            raise ValueError(msg)
        self.policy = policy or Policy()
        self.budgets: RetryBudgetLike | BudgetRegistryLike = (
            budget if budget is not None else BudgetRegistry()
        )
        # One budget for every peer, or one per peer: told apart once, here.
        self._budget: RetryBudgetLike | None = None
        self._registry: BudgetRegistryLike | None = None
        if isinstance(self.budgets, RetryBudgetLike):
            self._budget = self.budgets
        else:
            self._registry = self.budgets
        self.max_attempts = max_attempts
        self.deadline = deadline
        self.hooks = tuple(hooks)
        self._sleep = sleep
        self.clock = clock or time.monotonic
        self.random = random or _random.random
        self.refresh_credentials = refresh_credentials
        self.override = override
        self.exactly_once = exactly_once if exactly_once is not None else ExactlyOnce()
        self._facts: IdlePeers[AgentFacts] = IdlePeers(lambda _peer: AgentFacts(), clock=self.clock)
        # Whether some agent was learnt unlisted: until then a send's fast path asks nothing
        # of the facts (see `mark_unlisted`).
        self.unlisted_known = False
        self._observers = {
            name: tuple(
                getattr(hook, name)
                for hook in self.hooks
                if callable(getattr(hook, name, None))
                and getattr(type(hook), name, None) is not getattr(Hook, name)
            )
            for name in (*_HOOK_METHODS, *_TASK_HOOK_METHODS)
        }
        subscribe = getattr(self.budgets, "subscribe", None)
        if self._observers["on_budget_fallback"] and callable(subscribe):
            subscribe(self._budget_fallback)  # held weakly: the budget may outlive this Guard
        self.breaker = breaker
        subscribe = getattr(breaker, "subscribe", None)
        if self._observers["on_breaker"] and callable(subscribe):
            subscribe(self._breaker_changed)  # held weakly, as the budget's
        subscribe = getattr(breaker, "subscribe_fallback", None)
        if self._observers["on_breaker_fallback"] and callable(subscribe):
            subscribe(self._breaker_fallback)

    def budget_for(self, peer: str) -> RetryBudgetLike:
        """The retry budget of ``peer``."""
        if self._registry is not None:
            return self._registry.get(peer)
        assert self._budget is not None  # noqa: S101 (one of the two is set)
        return self._budget

    def facts(self, agent: str) -> AgentFacts:
        """What the doors have learnt of ``agent`` (see `AgentFacts`): the same object per key.

        The key is a door's `TaskReader.agent` (the interface a message goes to). Forgotten
        once unused for ten minutes, as a budget is.
        """
        return self._facts.get(agent)

    def mark_unlisted(self, agent: str) -> None:
        """Learn that ``agent``'s tasks cannot be listed for this caller (see `AgentFacts`)."""
        self._facts.get(agent).unlisted = True
        self.unlisted_known = True

    def run_reads(
        self,
        search: Generator[Query, Any, R],
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
        *,
        peer: str,
        deadline_at: float | None = None,
        agent: str | None = None,
    ) -> R | Unresolved:
        """Run a sans-IO search of an agent's tasks, each query a read under this Guard.

        For doors: ``search`` is `a2a_client_errors.lookup.find_sent` or
        `a2a_client_errors.lookup.follow_task`; ``ask`` asks one query (one request, no retry;
        a raised `ReadFailedError` or transport error is judged). A failed read is retried as the
        policy retries any read of ``peer``, each retry paid for from its budget, and nothing
        waits past ``deadline_at`` (this Guard's clock): the search then ends `Unresolved`. A
        ListTasks the agent refuses marks ``agent`` (default: ``peer``) unlisted.
        """
        judge = self._read_judge(peer, agent or peer, deadline_at)
        effects = reading(search, judge, clock=self.clock, deadline_at=deadline_at)
        return drive(effects, ask, self._sleep_sync, self.budget_for(peer).try_spend)

    async def arun_reads(
        self,
        search: Generator[Query, Any, R],
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
        *,
        peer: str,
        deadline_at: float | None = None,
        agent: str | None = None,
    ) -> R | Unresolved:
        """`run_reads`, awaiting ``ask`` (a coroutine function), the sleep and the budget."""
        judge = self._read_judge(peer, agent or peer, deadline_at)
        effects = reading(search, judge, clock=self.clock, deadline_at=deadline_at)
        budget = self.budget_for(peer)
        spend = getattr(budget, "atry_spend", None) or budget.try_spend
        return await adrive(effects, ask, self._sleep_async, spend)

    def _read_judge(
        self, peer: str, agent: str, deadline_at: float | None
    ) -> Callable[[GetTaskQuery | ListTasksQuery | CardQuery, Exception, int], float | str]:
        """How a failed read of a search is judged: the pause before its retry, or why not."""

        def judge(
            query: GetTaskQuery | ListTasksQuery | CardQuery, exc: Exception, asked: int
        ) -> float | str:
            if isinstance(query, CardQuery):
                return "the agent's card could not be read"  # then it is not known to
            operation = "GetTask" if isinstance(query, GetTaskQuery) else "ListTasks"
            error = exc.error if isinstance(exc, ReadFailedError) else None
            if error is None and not isinstance(exc, ReadFailedError):
                error = normalize(exc, limits=self.policy.limits, operation=operation)
            if error is None:
                return f"the look-up's {operation} was not answered as asked ({exc})"
            time_left = None if deadline_at is None else deadline_at - self.clock()
            decision = self.policy.decide(
                error,
                operation=operation,
                attempt=asked,
                max_attempts=self.max_attempts,
                time_left=time_left,
                draw=self.random(),
            )
            if decision.will_retry:
                return decision.delay or 0.0
            if operation == "ListTasks" and decision.action is not Action.RETRY:
                self.mark_unlisted(agent)  # refused, not unwell: it will not list
            return f"the look-up's {operation} failed ({error.reason or error.kind})"

        return judge

    def _budget_fallback(self, event: BudgetFallback) -> None:
        self._emit("on_budget_fallback", event)

    def _breaker_changed(self, event: BreakerTransition) -> None:
        self._emit("on_breaker", event)

    def _breaker_fallback(self, event: BreakerFallback) -> None:
        self._emit("on_breaker_fallback", event)

    def record_task(
        self,
        task: object,
        *,
        skill: str | None = None,
        peer: str | None = None,
        operation: str | None = None,
    ) -> TaskOutcome | None:
        """Tell the hooks about a task received outside a guarded client; return its outcome.

        For tasks an orchestrator gets by other means (a raw httpx call, a push notification,
        a stream it reads itself). ``task`` is anything `task_outcome` reads (an a2a-sdk
        ``Task`` or ``StreamResponse``, a JSON task or JSON-RPC result, an ``httpx.Response``)
        or a `TaskOutcome`. Hooks are told only when it holds a task; never raises.

        Args:
            task: the task, or the answer that carries it.
            skill: the skill the task was sent to (A2A tasks do not carry one).
            peer: the peer's key (default ``"default"``, as for calls).
            operation: the A2A operation that returned it, if any.

        Returns:
            The task's outcome, or None when ``task`` holds no task.

        """
        outcome = task if isinstance(task, TaskOutcome) else task_outcome(task)
        if outcome is not None and self._observers["on_task_outcome"]:
            event = TaskOutcomeEvent(outcome, peer or "default", operation, skill)
            self._emit("on_task_outcome", event)
        return outcome

    # --- the two loops ----------------------------------------------------------------------

    def call(
        self,
        fn: Callable[..., T],
        *args: Any,
        operation: str | None = None,
        peer: str | None = None,
        deadline: float | None = None,
        lookup: Lookup | None = None,
        **kwargs: Any,
    ) -> T:
        """Call ``fn(*args, **kwargs)`` under the guard; return its result or raise.

        A call whose ``operation`` creates work (SendMessage, SendStreamingMessage) is never
        resent after an attempt that may have been processed (its answer lost) unless
        ``lookup`` finds nothing, or the peer is declared to deduplicate
        (``exactly_once``); without a ``lookup`` such a call raises `OutcomeUnknown`.

        Raises:
            CallFailed: the subclass that names the final decision (`ReconcileNeeded`,
                `RetryExhausted`, ...), chained from the last attempt's exception.
            Exception: an exception that is not a call error (a bug in ``fn``) as it is.

        """
        shape = CallShape(operation, lookup=lookup) if operation or lookup else _NO_SHAPE
        return self._call_with(fn, args, peer=peer, shape=shape, deadline=deadline, kwargs=kwargs)

    def _call_with(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        *,
        peer: str | None,
        shape: CallShape = _NO_SHAPE,
        deadline: float | None = None,
        kwargs: dict[str, Any] | None = None,
        describe: Callable[[], CallShape] | None = None,
        plain: Callable[[Any], bool] | None = None,
        first: _Outcome | None = None,
        start: float | None = None,
    ) -> T:
        kwargs = kwargs or {}
        state = _Call(self, shape, peer, deadline, describe=describe, plain=plain, start=start)
        outcome = first if first is not None else state.attempt_now(fn, args, kwargs)
        while True:
            state.judge(outcome)
            if state.plan is _Plan.RETRY:
                try:
                    self._sleep_sync(state.delay)
                    outcome = tenacity.Retrying(**state.tenacity(self._sleep_sync))(
                        state.attempt_sync, fn, args, kwargs
                    )
                except BaseException:
                    state.unspend()  # a retry paid for and never sent costs nothing
                    raise
            if state.plan is _Plan.REFRESH:
                if not _sync_result(self._refresh(state)):
                    state.refresh_refused()
                    return state.finish(outcome)  # type: ignore[no-any-return]
                outcome = state.attempt_now(fn, args, kwargs)
                continue
            return state.finish(outcome)  # type: ignore[no-any-return]

    @overload
    async def acall(
        self,
        fn: Callable[..., Awaitable[T]],
        *args: Any,
        operation: str | None = None,
        peer: str | None = None,
        deadline: float | None = None,
        lookup: Lookup | None = None,
        **kwargs: Any,
    ) -> T: ...

    @overload
    async def acall(
        self,
        fn: Callable[..., T],
        *args: Any,
        operation: str | None = None,
        peer: str | None = None,
        deadline: float | None = None,
        lookup: Lookup | None = None,
        **kwargs: Any,
    ) -> T: ...

    async def acall(
        self,
        fn: Callable[..., Any],
        *args: Any,
        operation: str | None = None,
        peer: str | None = None,
        deadline: float | None = None,
        lookup: Lookup | None = None,
        **kwargs: Any,
    ) -> Any:
        """Await ``fn(*args, **kwargs)`` under the guard; return its result or raise.

        ``fn`` may be a coroutine function or return an awaitable; ``lookup`` too. Under a
        deadline, an attempt in flight is cut short when the time is up. Every attempt after
        the first starts after a turn of the event loop, even when neither ``fn`` nor the
        sleep ever suspends: calls that retry at once never starve the loop's other tasks.
        Raises as `call` does.
        """
        shape = CallShape(operation, lookup=lookup) if operation or lookup else _NO_SHAPE
        return await self._acall_with(
            fn, args, peer=peer, shape=shape, deadline=deadline, kwargs=kwargs
        )

    async def _acall_with(
        self,
        fn: Callable[..., Awaitable[T]] | Callable[..., T],
        args: tuple[Any, ...],
        *,
        peer: str | None,
        shape: CallShape = _NO_SHAPE,
        deadline: float | None = None,
        kwargs: dict[str, Any] | None = None,
        describe: Callable[[], CallShape] | None = None,
        plain: Callable[[Any], bool] | None = None,
        first: _Outcome | None = None,
        start: float | None = None,
    ) -> T:
        kwargs = kwargs or {}
        state = _Call(self, shape, peer, deadline, describe=describe, plain=plain, start=start)
        outcome = first if first is not None else await state.aattempt(fn, args, kwargs)
        while True:
            await state.ajudge(outcome)
            if state.plan is _Plan.RETRY:
                try:
                    await self._sleep_async(state.delay)
                    outcome = await tenacity.AsyncRetrying(**state.atenacity(self._sleep_async))(
                        state.aattempt, fn, args, kwargs
                    )
                except BaseException:
                    state.unspend()  # a retry paid for and never sent costs nothing
                    raise
            if state.plan is _Plan.REFRESH:
                if not await _async_result(self._refresh(state)):
                    state.refresh_refused()
                    return state.finish(outcome)  # type: ignore[no-any-return]
                outcome = await state.aattempt(fn, args, kwargs)
                continue
            return state.finish(outcome)  # type: ignore[no-any-return]

    # --- helpers ----------------------------------------------------------------------------

    def _refresh(self, state: _Call) -> object:
        assert self.refresh_credentials is not None  # noqa: S101 (planned only when set)
        assert state.decision is not None  # noqa: S101
        return self.refresh_credentials(state.decision)

    def _sleep_sync(self, seconds: float) -> None:
        if seconds <= 0 or _TESTING["on"]:
            return
        if self._sleep is None:
            time.sleep(seconds)
            return
        _refuse_awaitable(
            self._sleep(seconds),
            "Guard(sleep=...) returned an awaitable: use acall(), or a sync sleep",
        )

    async def _sleep_async(self, seconds: float) -> None:
        if seconds <= 0 or _TESTING["on"]:
            return
        if self._sleep is None:
            await asyncio.sleep(seconds)
            return
        result = self._sleep(seconds)
        if inspect.isawaitable(result):
            await result

    def observe(
        self,
        decision: Decision,
        *,
        peer: str,
        operation: str | None = None,
        attempt: int = 0,
    ) -> None:
        """Tell the hooks of a decision made outside a guarded attempt.

        For decisions an integration makes itself: a call the agent card says must fail, so
        not sent (``attempt`` 0), or an error in the middle of a stream. The hooks get
        ``on_decision``, and ``on_give_up`` unless the decision is ``ok`` or ``retry``.
        """
        if not (self._observers["on_decision"] or self._observers["on_give_up"]):
            return
        event = GuardEvent(decision, peer, operation, attempt, 0.0, self.budget_for(peer).tokens)
        self._emit("on_decision", event)
        if decision.action not in (Action.OK, Action.RETRY):
            self._emit("on_give_up", event)

    def _emit(
        self,
        name: str,
        event: GuardEvent
        | BudgetFallback
        | BreakerTransition
        | BreakerFallback
        | TaskOutcomeEvent
        | UnknownOutcomeEvent
        | FailoverEvent,
    ) -> None:
        for observer in self._observers[name]:
            _observe(observer, name, event)


def _observe(observer: Callable[[Any], None], name: str, event: object) -> None:
    try:
        observer(event)
    except Exception:
        # Observers never change the outcome, and never break the call.
        _log.exception("a2a_client_errors: hook %s failed", name)


class _Plan:
    """What the loop does next."""

    RETRY: Final = "retry"
    REFRESH: Final = "refresh"
    DONE: Final = "done"


class _Call:
    """The state of one guarded call: fresh per call, shared by nothing."""

    __slots__ = (
        "admission",
        "attempt",
        "budget",
        "deadline_at",
        "decision",
        "delay",
        "describe",
        "found",
        "guard",
        "held",
        "limit",
        "max_attempts",
        "maybe_processed",
        "now",
        "operation",
        "peer",
        "plain",
        "plan",
        "refreshed",
        "resends",
        "resolution",
        "shape",
        "start",
        "unsafe",
        "why",
    )

    def __init__(
        self,
        guard: Guard,
        shape: CallShape,
        peer: str | None,
        deadline: float | None,
        *,
        describe: Callable[[], CallShape] | None = None,
        plain: Callable[[Any], bool] | None = None,
        start: float | None = None,
    ) -> None:
        self.guard = guard
        self.describe = describe
        self.plain = plain
        self.shape = shape
        self.operation = shape.operation
        self.unsafe = shape.unsafe
        self.peer = peer or "default"
        self.start = guard.clock() if start is None else start
        limit = self.limit = deadline if deadline is not None else guard.deadline
        self.deadline_at = None if limit is None else self.start + limit
        cap = _TESTING["attempts"] if _TESTING["on"] else None
        self.max_attempts = guard.max_attempts if cap is None else min(cap, guard.max_attempts)
        self.attempt = 0
        self.decision: Decision | None = None
        self.delay = 0.0
        self.plan = _Plan.DONE
        self.refreshed = False
        self.budget: RetryBudgetLike | None = None
        self.held = False  # a retry's token taken from the budget, its retry not sent yet
        self.now = self.start
        self.maybe_processed = False
        self.found: _Outcome | None = None
        self.resolution: Resolution | None = None
        self.resends = False  # whether a resend follows the look-up, if it proves absence
        self.why = ""
        self.admission: Admission | None = None

    # --- the breaker ---------------------------------------------------------------------

    def attempt_now(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Outcome:
        """One attempt, unless the peer's breaker refuses it (then nothing is sent)."""
        breaker = self.guard.breaker
        if breaker is not None:
            admission = self.admission = breaker.admit(self.peer)
            if not admission.allowed:
                return _Outcome(refused=admission)
            try:
                return _attempt(fn, args, kwargs)
            except BaseException:  # interrupted: no verdict, and the probe's slot is freed
                self._verdict(Verdict.ABANDONED)
                raise
        return _attempt(fn, args, kwargs)

    async def _aadmit(self) -> Admission:
        breaker = self.guard.breaker
        assert breaker is not None  # noqa: S101 (asked only when set)
        aadmit = getattr(breaker, "aadmit", None)
        admission = await aadmit(self.peer) if aadmit is not None else breaker.admit(self.peer)
        self.admission = admission
        return admission

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
        self.plan = _Plan.DONE
        if guard._observers["on_decision"]:
            guard._emit("on_decision", self._event(decision, now))
        if guard._observers["on_peer_unavailable"]:
            guard._emit("on_peer_unavailable", self._event(decision, now))

    def judge(self, outcome: _Outcome) -> bool:
        """Decide about one attempt's outcome; True when the loop should retry it."""
        if outcome.refused is not None:
            self._refused(outcome.refused)
            return False
        decision = self._decide(outcome)
        if decision is None:
            return False
        if self.shape.failover and _moves_on(decision):
            return self._settle(decision.given_up(GiveUp.FAILOVER))
        if self._must_look(decision):
            decision = self._looked(decision, self._look())
            if decision is None:
                return False
        if decision.will_retry:
            spent = self.held = self._budget().try_spend()
            decision = self._spent(decision, spent)
        self._resolved(decision)
        return self._settle(decision)

    async def ajudge(self, outcome: _Outcome) -> bool:
        """`judge`, awaiting the budget when it can wait for a shared store (``atry_spend``)."""
        if outcome.refused is not None:
            self._refused(outcome.refused)
            return False
        decision = self._decide(outcome)
        if decision is None:
            return False
        if self.shape.failover and _moves_on(decision):
            return self._settle(decision.given_up(GiveUp.FAILOVER))
        if self._must_look(decision):
            decision = self._looked(decision, await self._alook())
            if decision is None:
                return False
        if decision.will_retry:
            budget = self._budget()
            atry_spend = getattr(budget, "atry_spend", None)
            spent = await atry_spend() if atry_spend is not None else budget.try_spend()
            self.held = bool(spent)
            decision = self._spent(decision, self.held)
        self._resolved(decision)
        return self._settle(decision)

    def attempt_sync(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Outcome:
        """One attempt of ``Guard.call``: the retry it sends has used its token."""
        self.held = False
        return self.attempt_now(fn, args, kwargs)

    def unspend(self) -> None:
        """The retry paid for was never sent (the caller gave up while it waited): refund it.

        The token goes back to the budget when it can take it (``refund``); never raises.
        """
        if not self.held:
            return
        self.held = False
        refund = getattr(self.budget, "refund", None)
        if callable(refund):
            try:
                refund()
            except Exception:  # a budget's bug never hides why the call ended
                _log.exception("a2a_client_errors: the retry budget's refund failed")

    async def aattempt(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Outcome:
        """One attempt, cut short when the call's deadline comes (the time left is its own).

        Unless the peer's breaker refuses it: then nothing is sent. Every attempt after the
        first yields to the event loop before it starts, whatever the sleep and ``fn`` do, so
        a call that retries never holds the loop for more than one attempt at a time.
        """
        if self.attempt:
            await asyncio.sleep(0)  # before the token is used: a cancellation here refunds it
        self.held = False  # a retry sent has used its token
        if self.guard.breaker is not None:
            admission = await self._aadmit()
            if not admission.allowed:
                return _Outcome(refused=admission)
            try:
                return await self._aattempt_in_time(fn, args, kwargs)
            except BaseException:  # cancelled: no verdict, and the probe's slot is freed
                self._verdict(Verdict.ABANDONED)
                raise
        return await self._aattempt_in_time(fn, args, kwargs)

    async def _aattempt_in_time(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Outcome:
        deadline_at = self.deadline_at
        if deadline_at is None:
            return await _aattempt(fn, args, kwargs)
        left = deadline_at - self.guard.clock()
        if self.shape.makes_work:
            # Keep part of the deadline for the look-up, should this attempt's answer be lost.
            left = self.guard.exactly_once.attempt_time(left, self.limit)
        return await _aattempt(fn, args, kwargs, max(left, 0.0))

    # --- unknown outcomes of calls that create work ------------------------------------------

    def _must_look(self, decision: Decision) -> bool:
        """Whether a resend (or a give-up) must wait for a look-up.

        It must when the attempt may have made a task. A peer that deduplicates (declared,
        or said in its card) is resent at once, when a resend follows; when none does (no
        attempt left), it is looked up as any other: the task it may have made is the answer.
        A broken answer (``report``: INVALID_AGENT_RESPONSE, a stream with no event) is looked
        up too, though never resent.
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
        if decision.action is not Action.RETRY:
            # Never resent: looked up only where a look-up exists, for the task it may be.
            return self.shape.lookup is not None
        guard = self.guard
        lookup = self.shape.lookup
        agent = lookup.agent if isinstance(lookup, TaskReader) else self.peer
        deduplicates = guard.exactly_once.deduplicates(self.peer) or guard.facts(agent).deduplicates
        if deduplicates and decision.will_retry:
            self.resolution = Resolution.DEDUPLICATING
            return False
        self.resends = decision.will_retry
        return True

    def _look_until(self) -> float | None:
        """When the look-up must end (the Guard's clock): the deadline, or its own timeout."""
        now = self.guard.clock()
        until = now + self.guard.exactly_once.timeout
        if self.deadline_at is None:
            return until
        return min(until, self.deadline_at) if self.deadline_at > now else None

    def _look(self) -> LookupResult:
        lookup = self.shape.lookup
        if lookup is None:
            return _NO_LOOKUP
        until = self._look_until()
        if until is None:
            return _NO_TIME
        if not self._budget().try_spend():
            return _NO_BUDGET
        guard = self.guard
        try:
            if isinstance(lookup, TaskReader):
                searched = guard.run_reads(
                    self._search(lookup),
                    lookup.ask,
                    peer=self.peer,
                    deadline_at=until,
                    agent=lookup.agent,
                )
                return self._searched(lookup, searched, lookup.found)
            result = lookup(until - guard.clock())
        except Exception as exc:  # a look-up that fails could not look
            return Unresolved(f"the look-up failed ({type(exc).__name__})")
        # Misuse, not a failed look: said to the caller, as for ``fn``.
        _refuse_awaitable(result, "a Guard.call() look-up returned an awaitable: use acall()")
        return result  # type: ignore[return-value]

    async def _alook(self) -> LookupResult:
        lookup = self.shape.lookup
        if lookup is None:
            return _NO_LOOKUP
        until = self._look_until()
        if until is None:
            return _NO_TIME
        budget = self._budget()
        atry_spend = getattr(budget, "atry_spend", None)
        if not (await atry_spend() if atry_spend is not None else budget.try_spend()):
            return _NO_BUDGET
        guard = self.guard
        try:
            if isinstance(lookup, TaskReader):
                searched = await guard.arun_reads(
                    self._search(lookup),
                    lookup.ask,
                    peer=self.peer,
                    deadline_at=until,
                    agent=lookup.agent,
                )
                found = self._searched(lookup, searched, lookup.found)
                if isinstance(found, Found) and inspect.isawaitable(found.value):
                    return Found(await found.value)
                return found
            time_left = until - guard.clock()
            looked = lookup(time_left)
            result: LookupResult = (
                await asyncio.wait_for(looked, time_left) if inspect.isawaitable(looked) else looked
            )
        except asyncio.TimeoutError:
            return Unresolved("the look-up did not finish in time")
        except Exception as exc:  # a look-up that fails could not look
            return Unresolved(f"the look-up failed ({type(exc).__name__})")
        return result

    def _search(self, reader: TaskReader) -> Generator[Query, Any, LookupResult]:
        """The look-up: the agent's card first (once per agent), then the search.

        An agent whose card advertises deduplication needs no search when a resend follows
        (`Deduplicates`). The search knows what the agent answers messages with.
        """
        facts = self.guard.facts(reader.agent)
        if not facts.card_read:
            facts.card_read = True
            if (yield from card_says_deduplicates()):
                facts.deduplicates = True
                if self.resends:  # else its task is looked for: no resend follows
                    return _DEDUPLICATES
        return (
            yield from find_sent(
                reader.sent,
                self.guard.exactly_once,
                reader.view,
                answers_with_messages=facts.answers_with_messages,
            )
        )

    @staticmethod
    def _searched(
        reader: TaskReader, result: LookupResult, found: Callable[[Any], Any]
    ) -> LookupResult:
        """The search's result as the look-up's: "not there" only where the message went."""
        if isinstance(result, Found):
            return Found(found(result.value))
        if isinstance(result, NotFound) and reader.elsewhere:
            return _ELSEWHERE
        return result

    def _looked(self, decision: Decision, result: LookupResult) -> Decision | None:
        """The decision after the look-up: None when the task was found (the call's answer)."""
        if isinstance(result, Found):
            self._budget().credit()  # the peer answered the look-up: it is up
            if self.guard._observers["on_decision"]:  # the attempt's error, as any other
                self.guard._emit("on_decision", self._event(decision, self.now))
            self.resolution = Resolution.FOUND
            self.found = _Outcome(value=result.value)
            self._tell_unknown(decision)
            found = Decision(Action.OK, operation=self.operation, attempt=self.attempt)
            self.decision = found
            self.plan = _Plan.DONE
            if self.guard._observers["on_decision"]:  # the call ended well: it answered
                self.guard._emit("on_decision", self._event(found, self.guard.clock()))
            return None
        if isinstance(result, NotFound):
            self.resolution = Resolution.RESENT  # or NOT_FOUND, once the retry is settled
            return decision
        if isinstance(result, Deduplicates):  # its card says so: resent as any retry
            self.resolution = Resolution.DEDUPLICATING
            return decision
        self.resolution = Resolution.UNRESOLVED
        self.why = result.why
        if decision.action is not Action.RETRY:
            return decision  # never resent anyway: the failure stands (maybe_processed)
        return decision.given_up(GiveUp.OUTCOME_UNKNOWN)

    def _resolved(self, decision: Decision) -> None:
        """Tell the hooks how an unknown outcome ended, once the retry is settled."""
        resolution = self.resolution
        if resolution is None:
            return
        if resolution is Resolution.RESENT and not decision.will_retry:
            self.resolution = resolution = Resolution.NOT_FOUND
        if resolution is Resolution.DEDUPLICATING and not decision.will_retry:
            self.resolution = None
            return
        self._tell_unknown(decision)
        self.resolution = None

    def _tell_unknown(self, decision: Decision) -> None:
        guard = self.guard
        if not guard._observers["on_unknown_outcome"]:
            return
        assert self.resolution is not None  # noqa: S101 (told only once resolved)
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
        guard._emit("on_unknown_outcome", event)

    def _decide(self, outcome: _Outcome) -> Decision | None:
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
            self._succeeded()
            answered = self.shape.answered
            if answered is not None:
                _observe(answered, "answered", outcome.value)
            return None
        self._verdict(verdict_of(error), error)
        self._know()
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
            self._budget().credit()
        return decision

    @staticmethod
    def _spent(decision: Decision, spent: bool) -> Decision:
        """The retry the budget paid for, or the give-up it refused."""
        return decision if spent else decision.given_up(GiveUp.BUDGET)

    def _settle(self, decision: Decision) -> bool:
        """Record ``decision``, tell the hooks and plan what the loop does next."""
        guard = self.guard
        now = self.now
        self.decision = decision
        self.delay = decision.delay or 0.0
        observers = guard._observers
        if observers["on_decision"]:
            guard._emit("on_decision", self._event(decision, now))
        if decision.will_retry:
            self.plan = _Plan.RETRY
            if observers["on_retry"]:
                guard._emit("on_retry", self._event(decision, now))
            return True
        if decision.give_up is GiveUp.BUDGET and observers["on_budget_exhausted"]:
            guard._emit("on_budget_exhausted", self._event(decision, now))
        if (
            decision.action is Action.AUTH
            and guard.refresh_credentials is not None
            and not self.refreshed
            and self.attempt < self.max_attempts + 1
        ):
            self.refreshed = True
            self.plan = _Plan.REFRESH
            return False
        self.plan = _Plan.DONE
        return False

    def _know(self) -> None:
        """Learn the operation and the resend safety, when the caller left them for later."""
        describe = self.describe
        if describe is not None:
            self.describe = None
            shape = self.shape = describe()
            self.operation, self.unsafe = shape.operation, shape.unsafe

    def _budget(self) -> RetryBudgetLike:
        """The peer's budget, looked up once per call."""
        budget = self.budget
        if budget is None:
            budget = self.budget = self.guard.budget_for(self.peer)
        return budget

    def _succeeded(self) -> None:
        """The call returned a result: the fast path (no retry to plan, nothing to raise)."""
        guard = self.guard
        self._budget().credit()
        if guard._observers["on_decision"]:
            self._know()
            decision = Decision(Action.OK, operation=self.operation, attempt=self.attempt)
            self.decision = decision
            guard._emit("on_decision", self._event(decision, guard.clock()))
        else:
            self.decision = _OK
        self.plan = _Plan.DONE

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

    def tenacity(self, sleep: Callable[[float], Any]) -> dict[str, Any]:
        """The Retrying arguments that run attempts 2..n with this call's decision core."""
        return {
            "sleep": sleep,
            "stop": tenacity.stop_never,
            "retry": lambda rs: self.judge(rs.outcome.result()),
            "wait": lambda rs: self.delay,
            "reraise": True,
        }

    def atenacity(self, sleep: Callable[[float], Any]) -> dict[str, Any]:
        """`tenacity`, for ``AsyncRetrying``: the decision core awaits the budget."""

        async def retry(retry_state: tenacity.RetryCallState) -> bool:
            assert retry_state.outcome is not None  # noqa: S101 (tenacity judges after an attempt)
            return await self.ajudge(retry_state.outcome.result())

        return {**self.tenacity(sleep), "retry": retry}

    def refresh_refused(self) -> None:
        """The credentials refresh said no: the auth decision stands."""
        self.plan = _Plan.DONE

    def finish(self, outcome: _Outcome) -> Any:
        """Return the result of an ``ok`` call, or raise the failure its decision names."""
        decision = self.decision
        assert decision is not None  # noqa: S101 (judge ran)
        if decision.action is Action.OK:
            found = self.found
            return outcome.value if found is None else found.value
        guard = self.guard
        goes_on = self.shape.failover and (
            outcome.refused is not None or decision.give_up is GiveUp.FAILOVER
        )
        if guard._observers["on_give_up"] and not goes_on:
            guard._emit("on_give_up", self._event(decision, guard.clock()))
        if outcome.refused is not None:
            admission = outcome.refused
            raise PeerUnavailable(
                decision,
                attempts=self.attempt,
                maybe_processed=self.maybe_processed,
                peer=self.peer,
                state=admission.state,
                retry_in=admission.retry_in,
            )
        if decision.give_up is GiveUp.OUTCOME_UNKNOWN:
            raise OutcomeUnknown(
                decision,
                attempts=self.attempt,
                result=outcome.value,
                sent=self.shape.sent,
                why=self.why,
            ) from outcome.exc
        raise failure_for(decision)(
            decision,
            attempts=self.attempt,
            result=outcome.value,
            maybe_processed=self.maybe_processed,
        ) from outcome.exc

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


def _moves_on(decision: Decision) -> bool:
    """Whether a failure sends the call to the agent's next interface: a retry of nothing sent."""
    return decision.action is Action.RETRY and decision.delivery is Delivery.NOT_SENT


def _attempt(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Outcome:
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:  # every failure is judged; non-call errors are re-raised there
        return _Outcome(exc=exc)
    _refuse_awaitable(value, "Guard.call() got an awaitable from fn: use `await guard.acall(...)`")
    return _Outcome(value=value)


async def _aattempt(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    timeout: float | None = None,
) -> _Outcome:
    try:
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await (value if timeout is None else _within(value, timeout))
    except Exception as exc:  # every failure is judged; non-call errors are re-raised there
        return _Outcome(exc=exc)
    return _Outcome(value=value)


class AttemptCutShortError(TimeoutError):
    """The call's deadline came while an attempt was in flight (its outcome is unknown)."""


async def _within(awaitable: Awaitable[Any], timeout: float) -> Any:
    """Await ``awaitable`` for at most ``timeout`` seconds (then `AttemptCutShortError`)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError as exc:
        msg = "the call's deadline cut the attempt short"
        raise AttemptCutShortError(msg) from exc


def _refuse_awaitable(value: object, message: str) -> None:
    """Sync code got an awaitable: close it (no "never awaited" warning) and say what to use."""
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if callable(close):
            close()
        raise TypeError(message)


def _sync_result(value: object) -> bool:
    _refuse_awaitable(
        value, "refresh_credentials returned an awaitable: use acall(), or a sync refresh"
    )
    return bool(value)


async def _async_result(value: object) -> bool:
    if inspect.isawaitable(value):
        value = await value
    return bool(value)

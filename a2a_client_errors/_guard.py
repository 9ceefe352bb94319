"""The Guard: the configuration of guarded calls, their two doors, and the door API.

`Guard.call` and `Guard.acall` run a function under the guard. Every other door (the httpx
transports, the a2a-sdk client, the gRPC interceptor, or one of your own) uses the same
public door API: `Guard.begin` makes a `GuardedCall` (the engine, `a2a_client_errors._engine`),
whose ``run``/``arun`` carry out its attempts; `Guard.observers` and `Guard.tell` reach the
hooks; `Guard.judge` decides about one answer; `Guard.end_call` tells a call that a door ends
itself (a stream given up after its resubscriptions).

Each call gets a fresh `GuardedCall`: nothing mutable is shared between concurrent calls but
the (thread-safe) retry budgets and breakers. Every retry resends the *same* request: the same
arguments to ``fn`` (so the same message and messageId), and on the httpx path the same bytes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random as _random
import threading
import time
from typing import TYPE_CHECKING, Any, Final, TypeVar, overload

from a2a_client_errors._breaker import BreakerFallbacksLike, BreakerTransitionsLike
from a2a_client_errors._card_claims import (
    CardClaims,
    card_interfaces,
    interface_key,
    read_card_claims,
)
from a2a_client_errors._engine import (
    NO_SHAPE,
    TESTING,
    AttemptCutShortError,
    CallShape,
    GuardedCall,
    Lookup,
    Onward,
    adrive,
    drive,
    failure_for,
    refuse_awaitable,
    switch_testing,
    tell_record,
)
from a2a_client_errors._journal import Journal, LeaseKeeper, Recovery, entry_for, peer_key
from a2a_client_errors._lookup import (
    AgentFacts,
    AnswerTooLargeError,
    CardQuery,
    ExactlyOnce,
    GetTaskQuery,
    ListTasksQuery,
    LookupAllowance,
    Query,
    ReadFailedError,
    Unanswered,
    reading,
)
from a2a_client_errors._normalize import normalize
from a2a_client_errors._outcomes import TaskOutcome, task_outcome
from a2a_client_errors._policy import Decision, Policy, succeeded
from a2a_client_errors._reasons import Action, Delivery
from a2a_client_errors._retry import (
    BudgetFallbacksLike,
    BudgetRegistry,
    BudgetRegistryLike,
    IdlePeers,
    RetryBudgetLike,
)
from a2a_client_errors.hooks import (
    CallRecord,
    FailoverEvent,
    GuardEvent,
    Hook,
    Observers,
    TaskOutcomeEvent,
    UnknownOutcomeEvent,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator, Iterable

    from a2a_client_errors._breaker import CircuitBreakerLike
    from a2a_client_errors._effects import Effect
    from a2a_client_errors._failures import CallFailed
    from a2a_client_errors._journal import Entry, JournalRecord
    from a2a_client_errors._lookup import Asking

__all__ = [
    "AttemptCutShortError",
    "CallRecord",
    "CallShape",
    "FailoverEvent",
    "Guard",
    "GuardEvent",
    "GuardedCall",
    "Hook",
    "Lookup",
    "TaskOutcomeEvent",
    "UnknownOutcomeEvent",
    "failure_for",
    "switch_testing",
]

_log = logging.getLogger("a2a_client_errors")
T = TypeVar("T")
R = TypeVar("R")

_NO_SHAPE: Final = NO_SHAPE
_NO_CARD: Final = Unanswered("the agent's card could not be read", final=True)
_MAX_CARDS: Final = 1024
"""Interfaces whose card a Guard keeps at most (the oldest learnt goes first)."""


def _check_limits(max_attempts: int, deadline: float | None) -> None:
    """Refuse a Guard's limits that no call could keep."""
    if max_attempts < 1:
        msg = "max_attempts must be at least 1"
        raise ValueError(msg)
    if deadline is not None and deadline <= 0:
        msg = "deadline must be positive (or None)"
        raise ValueError(msg)


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
        journal: where every send that creates work is recorded before its first byte (a
            `Journal`: `a2a_client_errors.journal.SqliteJournal`, `RedisJournal`,
            `PostgresJournal`): a messageId recorded is never sent as a first attempt again,
            by this process or another, after any crash (see `recover`). Default: None.

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
        journal: Journal | None = None,
    ) -> None:
        _check_limits(max_attempts, deadline)
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
        settings = self.exactly_once
        self._allowances: IdlePeers[LookupAllowance] = IdlePeers(
            lambda _peer: LookupAllowance(settings.allowance, settings.allowance_per_call),
            clock=self.clock,
        )
        # Whether some agent was learnt unlisted: until then a send's fast path asks nothing
        # of the facts (see `mark_unlisted`).
        self.unlisted_known = False
        # What cards say, per interface: kept until replaced or crowded out (see `learn_card`).
        self._cards: dict[str, CardClaims] = {}
        self._cards_lock = threading.Lock()
        self.cards_known = False
        """Whether some card was learnt: until then a door asks nothing of `card_claims`."""
        self.observers = Observers(self.hooks)
        """The hooks' methods, by name (for doors: ask before building an event)."""
        self.breaker = breaker
        self.journal = journal
        self.leases: LeaseKeeper | None = None if journal is None else LeaseKeeper(journal)
        """Renews the leases of the sends this Guard recorded, and writes how they ended (None:
        no journal). ``guard.leases.flush()`` waits until every close handed to it is written."""
        self._listen()

    def _listen(self) -> None:
        """Subscribe the hooks that asked to what the budget and the breaker tell.

        Held weakly by the budget and the breaker: this Guard may go away before them.
        """
        if self.observers["on_budget_fallback"] and isinstance(self.budgets, BudgetFallbacksLike):
            self.budgets.subscribe(self._budget_fallback)
        told: object = self.breaker  # what it tells is its own ability, beside CircuitBreakerLike
        if self.observers["on_breaker"] and isinstance(told, BreakerTransitionsLike):
            told.subscribe(self._breaker_changed)
        if self.observers["on_breaker_fallback"] and isinstance(told, BreakerFallbacksLike):
            told.subscribe_fallback(self._breaker_fallback)

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

    def learn_card(self, card: object, *, peer: str | None = None) -> CardClaims | None:
        """Learn what an agent's card says the agent supports; returns it (None: no card).

        An internal error (JSON-RPC -32603, or HTTP 500 / gRPC INTERNAL with no reason) that
        answers an operation the card says is not supported is then decided as the card's
        reason (PUSH_NOTIFICATION_NOT_SUPPORTED, UNSUPPORTED_OPERATION: ``degrade``, source
        ``agent_card``), not retried: some agents (a2a-sdk 0.3) refuse so.

        The card is kept for each interface it lists (the transports find it there; they
        learn every card they fetch themselves), and for ``peer`` when given (the key of
        `call`/`acall`). Kept until a newer card of the interface replaces it, not forgotten
        when the agent goes idle; at most 1024 interfaces, the oldest learnt going first.

        Args:
            card: the card's JSON object (1.0 or 0.3 layout), or an a2a-sdk ``AgentCard``
                (1.x or 0.3).
            peer: the peer key of calls to the agent made with `call`/`acall`, if any.

        """
        claims = read_card_claims(card)
        if claims is None:
            return None
        keys = [interface_key(url) for url in card_interfaces(card)]
        if peer is not None:
            keys.append(peer)
        cards = self._cards
        with self._cards_lock:
            for key in keys:
                if key is None:
                    continue
                cards.pop(key, None)  # a key learnt again is the newest
                cards[key] = claims
            while len(cards) > _MAX_CARDS:
                del cards[next(iter(cards))]
            self.cards_known = bool(cards)
        return claims

    def card_claims(self, agent: str) -> CardClaims | None:
        """What the card learnt for ``agent`` (an interface, or a peer key) says, if any."""
        return self._cards.get(agent)

    def allowance_for(self, peer: str) -> LookupAllowance:
        """The look-up allowance of ``peer`` (see `ExactlyOnce.allowance`, `LookupAllowance`).

        Kept per peer in this process, forgotten when the peer goes idle (then full again).
        """
        return self._allowances.get(peer)

    def reads(
        self,
        search: Generator[Query, Any, R],
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any] | None,
        *,
        agent: str,
        deadline_at: float | None = None,
        wait: bool = False,
        steps: Asking | None = None,
    ) -> Generator[Effect, Any, R]:
        """``search`` as reads under this Guard: effects for the engine's drivers to carry out.

        A look-up's failed read is retried as the policy retries any read of the agent, each
        read drawn from the peer's look-up allowance; a wait's (``wait=True``) is retried
        until ``deadline_at`` whatever its attempts. Nothing waits past ``deadline_at`` (this
        Guard's clock). A ListTasks the agent refuses marks ``agent`` unlisted. Each query is
        asked by ``ask`` (`TaskReader.ask`), or as the effects of ``steps``
        (`ReadSteps.asking`).
        """
        return reading(
            search,
            self._read_judge(agent, deadline_at),
            clock=self.clock,
            deadline_at=deadline_at,
            rationed=not wait,
            patient=self.exactly_once if wait else None,
            ask=ask,
            steps=steps,
        )

    def run_reads(
        self,
        search: Generator[Query, Any, R],
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
        *,
        peer: str,
        deadline_at: float | None = None,
        agent: str | None = None,
        wait: bool = False,
    ) -> R:
        """Run a sans-IO search of an agent's tasks, each query a read under this Guard.

        For doors: ``search`` is `a2a_client_errors._lookup.find_sent` (a look-up) or
        `a2a_client_errors._lookup.follow_task` (a wait: ``wait=True``); ``ask`` asks one
        query (one request, no retry; a raised `ReadFailedError` or transport error is
        judged). The reads (`reads`) are carried out by the engine's driver, as a call's
        are, drawing on the look-up allowance of ``peer`` (`allowance_for`); what is learnt
        is kept under ``agent`` (default: ``peer``).
        """
        effects = self.reads(search, ask, agent=agent or peer, deadline_at=deadline_at, wait=wait)
        return drive(effects, self, peer)

    async def arun_reads(
        self,
        search: Generator[Query, Any, R],
        ask: Callable[[GetTaskQuery | ListTasksQuery | CardQuery, float | None], Any],
        *,
        peer: str,
        deadline_at: float | None = None,
        agent: str | None = None,
        wait: bool = False,
    ) -> R:
        """`run_reads`, awaiting ``ask`` (a coroutine function) and the sleep."""
        effects = self.reads(search, ask, agent=agent or peer, deadline_at=deadline_at, wait=wait)
        return await adrive(effects, self, peer)

    def _read_judge(
        self, agent: str, deadline_at: float | None
    ) -> Callable[[GetTaskQuery | ListTasksQuery | CardQuery, Exception, int], float | Unanswered]:
        """How a failed read of a search is judged: the pause before its retry, or why not."""

        def judge(
            query: GetTaskQuery | ListTasksQuery | CardQuery, exc: Exception, asked: int
        ) -> float | Unanswered:
            if isinstance(query, CardQuery):
                return _NO_CARD  # then it is not known to deduplicate
            operation = "GetTask" if isinstance(query, GetTaskQuery) else "ListTasks"
            error = exc.error if isinstance(exc, ReadFailedError) else None
            if error is None and not isinstance(exc, ReadFailedError):
                error = normalize(exc, limits=self.policy.limits, operation=operation)
            if error is None:
                # The agent answered, not as asked (another shape): it will again. Too large
                # for the bytes left: a later look, with bytes of its own, may read it.
                why = f"the look-up's {operation} was not answered as asked ({exc})"
                return Unanswered(why, final=not isinstance(exc, AnswerTooLargeError))
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
            refused = decision.action is not Action.RETRY
            if operation == "ListTasks" and refused:
                self.mark_unlisted(agent)  # refused, not unwell: it will not list
            why = f"the look-up's {operation} failed ({error.reason or error.kind})"
            return Unanswered(why, final=refused)

        return judge

    # A budget or breaker that Guards share tells each of them every change: a hook that
    # several of those Guards share is told it once (`hooks.Observers.tell_once`).

    def _budget_fallback(self, event: object) -> None:
        self.observers.tell_once("on_budget_fallback", event)

    def _breaker_changed(self, event: object) -> None:
        self.observers.tell_once("on_breaker", event)

    def _breaker_fallback(self, event: object) -> None:
        self.observers.tell_once("on_breaker_fallback", event)

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
        if outcome is not None and self.observers["on_task_outcome"]:
            event = TaskOutcomeEvent(outcome, peer or "default", operation, skill)
            self.observers.tell("on_task_outcome", event)
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
        sent: object = None,
        **kwargs: Any,
    ) -> T:
        """Call ``fn(*args, **kwargs)`` under the guard; return its result or raise.

        A call whose ``operation`` creates work (SendMessage, SendStreamingMessage) is never
        resent after an attempt that may have been processed (its answer lost) unless the
        peer is declared to deduplicate (``exactly_once``) or ``lookup`` returns `NotFound`
        (your word that the task is absent); a ``lookup`` that finds the task gives the
        answer; without one such a call raises `OutcomeUnknown`.

        ``sent`` is the message a send sends (JSON, an a2a-sdk Message, or a `SentMessage`):
        its messageId for the look-up, and, under a ``journal``, the send's record (see
        `a2a_client_errors.journal`); it implies ``operation="SendMessage"`` when none is
        given. Without it, a journal records nothing of this call.

        Raises:
            CallFailed: the subclass that names the final decision (`ReconcileNeeded`,
                `RetryExhausted`, ...), chained from the last attempt's exception.
            Exception: an exception that is not a call error (a bug in ``fn``) as it is.

        """
        if sent is not None:
            shape = self._shape_of(operation, lookup, sent, peer)
        else:
            shape = CallShape(operation, lookup=lookup) if operation or lookup else _NO_SHAPE
        return GuardedCall(self, shape, peer, deadline).run(fn, args, kwargs)  # type: ignore[no-any-return]

    @overload
    async def acall(
        self,
        fn: Callable[..., Awaitable[T]],
        *args: Any,
        operation: str | None = None,
        peer: str | None = None,
        deadline: float | None = None,
        lookup: Lookup | None = None,
        sent: object = None,
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
        sent: object = None,
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
        sent: object = None,
        **kwargs: Any,
    ) -> Any:
        """Await ``fn(*args, **kwargs)`` under the guard; return its result or raise.

        ``fn`` may be a coroutine function or return an awaitable; ``lookup`` too. Under a
        deadline, an attempt in flight is cut short when the time is up. Every attempt after
        the first starts after a turn of the event loop, even when neither ``fn`` nor the
        sleep ever suspends: calls that retry at once never starve the loop's other tasks.
        Raises as `call` does.
        """
        shape = self._shape_of(operation, lookup, sent, peer)
        return await GuardedCall(self, shape, peer, deadline).arun(fn, args, kwargs)

    def _shape_of(
        self, operation: str | None, lookup: Lookup | None, sent: object, peer: str | None
    ) -> CallShape:
        """What `call` and `acall` are told of a call (``sent``: the message a send sends)."""
        if sent is None:
            return CallShape(operation, lookup=lookup) if operation or lookup else _NO_SHAPE
        entry = entry_for(sent, peer or "default")
        if entry is None:
            msg = "sent= must be a message with a messageId (JSON, an a2a-sdk Message, SentMessage)"
            raise ValueError(msg)
        identity = entry.sent_at(self.exactly_once.wall_clock())
        return CallShape(
            operation or "SendMessage", lookup=lookup, sent=identity, entry=entry, creates_work=True
        )

    # --- the journal ------------------------------------------------------------------------

    def recover(
        self,
        lookup_for: Callable[[JournalRecord], Lookup | None],
        *,
        limit: int = 100,
        deadline: float | None = None,
    ) -> list[Recovery]:
        """Come back to the sends left open in the journal by senders that are gone.

        For each open record nobody holds (its sender died, or its outcome was left
        unknown), oldest first, at most ``limit``: the record is taken over and its task
        looked up with ``lookup_for(record)`` (a `Lookup`: a door's, such as
        `GuardTransport.lookup_for`; None skips the record). Found: the record is closed
        with its task. Otherwise it stays open for a later recovery. Nothing is ever sent.
        Each look-up ends by ``deadline`` seconds (default: this Guard's, or
        ``ExactlyOnce.timeout``). Raises `JournalError` when the journal cannot be read.
        """
        found: list[Recovery] = []
        journal = self._journal()
        if self.leases is not None:
            self.leases.flush()  # this process's own closes first
        for record in journal.unsettled(limit=limit):
            call = self._recovery(record, lookup_for, deadline)
            found.append(
                call
                if isinstance(call, Recovery)
                else drive(call.recovering(record), self, call.peer, call)
            )
        return found

    async def arecover(
        self,
        lookup_for: Callable[[JournalRecord], Lookup | None],
        *,
        limit: int = 100,
        deadline: float | None = None,
    ) -> list[Recovery]:
        """`recover`, awaiting the look-ups (a door's async look-up, as `AsyncGuardTransport`'s)."""
        journal = self._journal()
        if self.leases is not None:
            await asyncio.to_thread(self.leases.flush)  # this process's own closes first
        records = await asyncio.to_thread(journal.unsettled, limit=limit)
        found: list[Recovery] = []
        for record in records:
            call = self._recovery(record, lookup_for, deadline)
            found.append(
                call
                if isinstance(call, Recovery)
                else await adrive(call.recovering(record), self, call.peer, call)
            )
        return found

    def _journal(self) -> Journal:
        if self.journal is None:
            msg = "this Guard has no journal: Guard(journal=...)"
            raise ValueError(msg)
        return self.journal

    def _recovery(
        self,
        record: JournalRecord,
        lookup_for: Callable[[JournalRecord], Lookup | None],
        deadline: float | None,
    ) -> GuardedCall | Recovery:
        """The call that recovers ``record``, or what it already is (held, skipped)."""
        if not record.lapsed:
            return Recovery(record, "held", why="a live sender holds it")
        lookup = lookup_for(record)
        if lookup is None:
            return Recovery(record, "skipped", why="no look-up was given for its peer")
        shape = CallShape("SendMessage", creates_work=True, sent=record.sent, lookup=lookup)
        return GuardedCall(self, shape, peer_key(record.peer), deadline)

    # --- the door API -----------------------------------------------------------------------

    def begin(
        self,
        *,
        peer: str | None = None,
        shape: CallShape = _NO_SHAPE,
        deadline: float | None = None,
        start: float | None = None,
        describe: Callable[[], CallShape] | None = None,
        plain: Callable[[Any], bool] | None = None,
        fail_over: Callable[[Decision], Onward | Awaitable[Onward | None] | None] | None = None,
        journal_entry: Callable[[], Entry | None] | None = None,
    ) -> GuardedCall:
        """Begin one guarded call, for a door: run its attempts with ``run`` or ``arun``.

        ``call.run(fn, args, kwargs)`` (``await call.arun(...)``) makes each attempt with
        ``fn``, judges it, and retries, looks up, refreshes or gives up as `call` does;
        ``first=`` hands over a first attempt the door made itself (`AttemptOutcome`). Once
        the call ended, ``call.end()`` is its `CallRecord` (made on demand for a success).

        Args:
            peer: the peer's key (its budget's and breaker's; default ``"default"``).
            shape: what the call is (`CallShape`), when known up front.
            deadline: seconds the call may take (default: this Guard's ``deadline``).
            start: when the call started, by this Guard's clock (default: now).
            describe: the shape, learnt only when a decision needs it (a failure, or a hook
                that sees successes): a call that succeeds at once never computes it.
            plain: what needs no judging: a value for which it returns True is a success.
            fail_over: how the call moves to the agent's next interface, for a door that has
                several (``shape.failover``): given the decision that left one (nothing sent,
                or its breaker open), it returns where the call goes on (`Onward`: the next
                interface's key, attempt and shape), or None when there is none (the call
                then goes on where it is). The engine tells `Hook.on_failover`, and the one
                `CallRecord` names the interface the call ended on. Without it, such a call
                ends with give-up ``failover`` for the door to move on itself.
            journal_entry: with ``describe``, what the journal records of the call (an
                `Entry`, None for a call it does not record), told before the first attempt
                of a Guard with a journal without reading the whole shape.

        """
        return GuardedCall(
            self,
            shape,
            peer,
            deadline,
            describe=describe,
            plain=plain,
            start=start,
            fail_over=fail_over,
            entry_of=journal_entry,
        )

    def tell(self, name: str, event: object) -> None:
        """Tell the hooks' method ``name`` (a `Hook` method) ``event``; never raises.

        For doors: ask ``guard.observers[name]`` first to build no event nobody sees.
        """
        self.observers.tell(name, event)

    def judge(self, answer: object, *, operation: str | None = None, attempt: int = 0) -> Decision:
        """The decision about one answer or exception, by this Guard's limits and policy.

        ``ok`` for a result. Nothing is told, spent or retried: for a door that meets an
        answer outside an attempt (an error in the middle of a stream), then `observe` or
        `end_call`.
        """
        error = normalize(answer, limits=self.policy.limits, operation=operation)
        if error is None:
            return succeeded(operation, attempt)
        return self.policy.decide(error, operation=operation, attempt=attempt)

    def end_call(
        self,
        failure: CallFailed,
        *,
        peer: str | None = None,
        operation: str | None = None,
        start: float | None = None,
    ) -> CallRecord:
        """Tell the end of a call that a door ends itself with ``failure``, once.

        For a stream given up after its resubscriptions, say: the hooks get ``on_give_up``
        and the `CallRecord` (``on_call``), which ``failure.record`` then holds.
        """
        if failure.record is not None:
            return failure.record
        peer = peer or "default"
        elapsed = 0.0 if start is None else self.clock() - start
        decision = failure.decision
        if self.observers["on_give_up"]:
            tokens = self.budget_for(peer).tokens
            event = GuardEvent(decision, peer, operation, failure.attempts, elapsed, tokens)
            self.observers.tell("on_give_up", event)
        failure.record = self._ended(
            CallRecord(
                decision,
                peer,
                operation,
                failure.attempts,
                elapsed,
                maybe_processed=failure.maybe_processed,
            )
        )
        return failure.record

    # --- helpers ----------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        """Sleep before a retry with this Guard's sleep (none under `set_testing`)."""
        if seconds <= 0 or TESTING["on"]:
            return
        if self._sleep is None:
            time.sleep(seconds)
            return
        refuse_awaitable(
            self._sleep(seconds),
            "Guard(sleep=...) returned an awaitable: use acall(), or a sync sleep",
        )

    async def asleep(self, seconds: float) -> None:
        """`sleep`, awaiting this Guard's sleep when it returns an awaitable."""
        if seconds <= 0 or TESTING["on"]:
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
        ends: bool = False,
    ) -> CallRecord | None:
        """Tell the hooks of a decision made outside a guarded attempt.

        For decisions an integration makes itself: a call the agent card says must fail, so
        not sent (``attempt`` 0), or an error in the middle of a stream. The hooks get
        ``on_decision``, and ``on_give_up`` unless the decision is ``ok`` or ``retry``. With
        ``ends``, the decision ends the call: ``on_give_up`` unless it is ``ok``, and the
        call's `CallRecord` (``on_call``), returned.
        """
        observers = self.observers
        if observers["on_decision"] or observers["on_give_up"]:
            tokens = self.budget_for(peer).tokens
            event = GuardEvent(decision, peer, operation, attempt, 0.0, tokens)
            observers.tell("on_decision", event)
            if decision.action is not Action.OK and (ends or decision.action is not Action.RETRY):
                observers.tell("on_give_up", event)
        if not ends:
            return None
        maybe_processed = decision.delivery is Delivery.UNKNOWN
        return self._ended(
            CallRecord(decision, peer, operation, attempt, 0.0, maybe_processed=maybe_processed)
        )

    def _ended(self, record: CallRecord) -> CallRecord:
        tell_record(self.observers, record)
        return record

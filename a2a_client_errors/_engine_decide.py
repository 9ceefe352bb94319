"""The decision core of a guarded call: each attempt judged, and every step after it decided.

`DecisionCore.steps` is a generator: from a call's first attempt on, it judges each outcome
(`a2a_client_errors._normalize.normalize`, the card, the `Policy`, the caller's override),
and yields the effects its decision needs (`a2a_client_errors._effects`: an admission, an
attempt, a spend, a sleep, a look-up's reads; a fail-over, a credentials refresh), until it
returns the call's value or raises its `CallFailed`. An attempt with an unknown outcome of a
call that may make a task is looked up (`DecisionCore.looking`, its reads effects of the
same steps) and resent only on the agent's word. It does no I/O: the drivers
(`a2a_client_errors._engine`) carry its effects out.

It reads and writes the call's state (`a2a_client_errors._engine_state.CallState`), and adds
none: a slot-less part of `GuardedCall`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._breaker import Verdict, verdict_of
from a2a_client_errors._card_claims import read_against_card
from a2a_client_errors._effects import ADMIT, SPEND, YIELD, Attempt, Look, Resolve, Sleep
from a2a_client_errors._engine_state import (
    RECORDING,
    SUCCESS,
    AttemptCutShortError,
    AttemptOutcome,
    CallState,
    FailOver,
    Refresh,
)
from a2a_client_errors._errors import CallError, ErrorKind
from a2a_client_errors._foreign_codes import read_generation
from a2a_client_errors._lookup import (
    READERS,
    Deduplicates,
    Found,
    NotFound,
    ReadSteps,
    Resolution,
    TaskReader,
    Unresolved,
    card_dedupe,
    find_sent,
    stepwise,
)
from a2a_client_errors._normalize import normalize
from a2a_client_errors._policy import Decision, GiveUp, succeeded
from a2a_client_errors._reasons import Action, Delivery, Reason, TransportFailure
from a2a_client_errors._retry import refunds
from a2a_client_errors.hooks import FailoverEvent, tell_one

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from a2a_client_errors._breaker import Admission
    from a2a_client_errors._engine_state import Effect, Lookup, Onward
    from a2a_client_errors._lookup import LookupResult, Query, SentMessage

__all__ = ["NO_LOOKUP", "DecisionCore"]

_log = logging.getLogger("a2a_client_errors")

_LOOKED_UP: Final = frozenset({Action.RETRY, Action.REPORT})
_MISMATCH: Final = Reason.TASK_GENERATION_MISMATCH
# A call that could never be resent needs no look-up: its failure says so (maybe_processed).
_NEVER_RESENT: Final = frozenset(
    {GiveUp.NOT_REPLAYABLE, GiveUp.NO_MESSAGE_ID, GiveUp.STREAM_STARTED}
)
NO_LOOKUP: Final = Unresolved("no look-up is known for this call")
"""The look-up's result for a call no look-up is known for."""
_NO_TIME: Final = Unresolved("the deadline left no time to look")
_NO_BUDGET: Final = "the retry budget is spent: nothing was resent"
_RESENDS: Final = frozenset({Resolution.RESENT, Resolution.DEDUPLICATING})
"""The resolutions that mean a resend: told to the hooks only once it is sent."""
_DEDUPLICATES: Final = Deduplicates()
_ELSEWHERE: Final = Unresolved(
    "not there on another interface of the agent, which may keep its own task store"
)
_PLAIN: Final = (str, bytes, bytearray, memoryview, int, float)


class DecisionCore(CallState):
    """The decision core of a call (`steps`): it judges each attempt and decides what follows."""

    __slots__ = ()

    def steps(self, outcome: AttemptOutcome) -> Generator[Effect, Any, Any]:
        """Every step of the call from its first attempt's ``outcome`` on, each judged alike.

        Yields the effects to carry out; returns the call's value, or raises its failure.
        """
        decision: Decision | None = None
        while True:
            if outcome.refused is not None:
                self._refused(outcome.refused)
                if (yield from self._moves(self.decision)):
                    outcome = yield from self.attempting()
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
                    outcome = yield from self.attempting()
                    continue
            retry = yield from self._judge(decision)
            decision = None
            if retry:
                try:
                    yield Sleep(self.delay)
                    yield YIELD  # before the token is used: a cancellation here refunds it
                    outcome = yield from self.attempting()
                except BaseException:
                    self.unspend()  # a retry paid for and never sent costs nothing
                    raise
                continue
            if self._refreshes():
                assert self.decision is not None  # noqa: S101 (settled)
                if not (yield Refresh(self.decision)):
                    return self.finish(outcome)  # the refresh said no: the auth decision stands
                yield YIELD
                outcome = yield from self.attempting()
                continue
            if self.found is not None:
                return self.finish(self.found)
            return self.finish(outcome)

    # --- judging an attempt ------------------------------------------------------------------

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
                self.verdict(Verdict.ABANDONED)
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
                self.know()  # an error status is read against the operation it answers
            error = normalize(outcome.value, limits=guard.policy.limits, operation=self.operation)
        if error is None:
            self.verdict(Verdict.HEALTHY)
            self._succeeded(outcome.value)
            return None
        self.know()
        error = self._against_card(error)
        if error.reason is _MISMATCH:
            error = read_generation(error, self.operation, self.shape.generation_precondition)
        self.verdict(verdict_of(error), error)
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

    def _succeeded(self, value: Any) -> None:
        """The call returned a result: the fast path (no retry to plan, nothing to raise)."""
        guard = self.guard
        self.budget_now().credit()
        observers = guard.observers
        if observers["on_decision"]:
            self.know()
            decision = succeeded(self.operation, self.attempt)
            self.decision = decision
            observers.tell("on_decision", self.event_for(decision, guard.clock()))
        else:
            self.decision = SUCCESS
        answered = self.shape.answered
        if answered is not None:
            tell_one(answered, "answered", value)
        if (observers["on_call"] or RECORDING.get() is not None) and not self.holds_end:
            self.end()

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

    def _settle(self, decision: Decision) -> bool:
        """Record ``decision`` and tell the hooks; True when a retry follows."""
        guard = self.guard
        now = self.now
        self.decision = decision
        self.delay = decision.delay or 0.0
        observers = guard.observers
        if observers["on_decision"]:
            observers.tell("on_decision", self.event_for(decision, now))
        if decision.will_retry:
            if observers["on_retry"]:
                observers.tell("on_retry", self.event_for(decision, now))
            return True
        if decision.give_up is GiveUp.BUDGET and observers["on_budget_exhausted"]:
            observers.tell("on_budget_exhausted", self.event_for(decision, now))
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

    # --- the attempts after the first --------------------------------------------------------

    def attempting(self) -> Generator[Effect, Any, AttemptOutcome]:
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
            self.tell_unknown(resending)
            self.resolution = None
        try:
            outcome: AttemptOutcome = yield Attempt(self.attempt_time())
        except BaseException:  # interrupted, cancelled: no verdict, and the probe's slot is freed
            if self.guard.breaker is not None:
                self.verdict(Verdict.ABANDONED)
            raise
        return outcome

    def attempt_time(self) -> float | None:
        """The time an attempt may take: what is left of the deadline, part kept to look up."""
        deadline_at = self.deadline_at
        if deadline_at is None:
            return None
        left = deadline_at - self.guard.clock()
        if self.shape.makes_work:
            # Keep part of the deadline for the look-up, should this attempt's answer be lost.
            left = self.guard.exactly_once.attempt_time(left, self.limit)
        return max(left, 0.0)

    def verdict(self, verdict: Verdict, error: CallError | None = None) -> Verdict:
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
        self.know()
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
            observers.tell("on_decision", self.event_for(decision, now))
        if observers["on_peer_unavailable"]:
            observers.tell("on_peer_unavailable", self.event_for(decision, now))

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
        facts = guard.facts(self.agent_key())
        return facts.dedupe_covers(guard.clock() - self.start + (decision.delay or 0.0))

    def _look(self) -> Generator[Effect, Any, LookupResult]:
        """The look-up, within the deadline (or its own time), drawing on its allowance."""
        lookup = self.shape.lookup
        if lookup is None:
            return NO_LOOKUP
        guard = self.guard
        now = guard.clock()
        until = now + guard.exactly_once.timeout
        if self.deadline_at is not None:
            if self.deadline_at <= now:
                return _NO_TIME
            until = self.deadline_at
        guard.allowance_for(self.peer).deposit()  # each look-up adds its share of a read
        search = self.search(lookup) if isinstance(lookup, READERS) else None
        result: LookupResult = yield from self.looking(lookup, until, search)
        return result

    def search(
        self,
        reader: TaskReader | ReadSteps,
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

    def looking(
        self,
        lookup: Lookup,
        until: float,
        search: Generator[Query, Any, LookupResult] | None,
    ) -> Generator[Effect, Any, LookupResult]:
        """A look-up, as effects of this call: a reader's reads, or one `Look`.

        A `TaskReader`'s queries are each one `Ask`; a `ReadSteps`' are its own steps, their
        needs carried out through the door's sender, and so is the answer built from the task
        found. A look-up that fails could not look: `Unresolved`, saying what failed.
        """
        if not isinstance(lookup, READERS):
            result: LookupResult = yield Look(lookup, until)
            return result
        assert search is not None  # noqa: S101 (made with its reader)
        try:
            if isinstance(lookup, ReadSteps):
                searched = yield from self.guard.reads(
                    search, None, agent=lookup.agent, deadline_at=until, steps=lookup.asking
                )
                found = _searched(lookup, searched)
                if isinstance(found, Found):
                    finding = stepwise(lookup.finding(found.value), "ReadSteps.finding")
                    found = Found((yield from finding))
            else:
                searched = yield from self.guard.reads(
                    search, lookup.ask, agent=lookup.agent, deadline_at=until
                )
                found = _searched(lookup, searched)
                if isinstance(found, Found):
                    answer = lookup.found(found.value)
                    if inspect.isawaitable(answer):
                        answer = yield Resolve(answer)
                    found = Found(answer)
        except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
            return Unresolved("the look-up did not finish in time")
        except Exception as exc:  # a look-up that fails could not look
            return Unresolved(f"the look-up failed ({type(exc).__name__})")
        return found

    def _looked(self, decision: Decision, result: LookupResult) -> Decision | None:
        """The decision after the look-up: None when the task was found (the call's answer)."""
        guard = self.guard
        observers = guard.observers
        if isinstance(result, Found):
            self.budget_now().credit()  # the peer answered the look-up: it is up
            if observers["on_decision"]:  # the attempt's error, as any other
                observers.tell("on_decision", self.event_for(decision, self.now))
            self.resolution = Resolution.FOUND
            self.found = AttemptOutcome(value=result.value)
            self.tell_unknown(decision)
            found = succeeded(self.operation, self.attempt)
            self.decision = found
            if observers["on_decision"]:  # the call ended well: it answered
                observers.tell("on_decision", self.event_for(found, guard.clock()))
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
        pause before it, the breaker or the end of the call may yet stop it (`CallState.end`).
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
        self.tell_unknown(decision)
        self.resolution = None


def _searched(reader: TaskReader | ReadSteps, result: LookupResult) -> LookupResult:
    """The search's result as the look-up's: "not there" only where the message went."""
    if reader.elsewhere and not isinstance(result, Found):
        if isinstance(result, NotFound):
            return _ELSEWHERE
        if isinstance(result, Unresolved):
            return Unresolved(f"{result.why}; {_ELSEWHERE.why}")
    return result


def _moves_on(decision: Decision) -> bool:
    """Whether a failure sends the call to the agent's next interface: a retry of nothing sent."""
    return decision.action is Action.RETRY and decision.delivery is Delivery.NOT_SENT

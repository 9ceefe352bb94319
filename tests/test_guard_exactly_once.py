"""The Guard's unknown-outcome path: a call that creates work is looked up before any resend.

Attempts are scripted fakes; sleeps go to a fake clock. The only real waits are bounds (a
deadline or a look-up timeout of a few hundredths of a second on an awaitable that never ends).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from a2a_client_errors import Action
from a2a_client_errors._breaker import Admission, BreakerState, Verdict
from a2a_client_errors._failures import (
    DeadlineExceeded,
    FixRequestNeeded,
    OutcomeUnknown,
    PeerUnavailable,
    RetryExhausted,
)
from a2a_client_errors._guard import CallShape, Guard, UnknownOutcomeEvent
from a2a_client_errors._lookup import ExactlyOnce, Found, NotFound, Resolution, Unresolved
from a2a_client_errors._policy import GiveUp
from a2a_client_errors._reasons import Delivery
from a2a_client_errors.instrumentation import LoggingHook, PrometheusHook
from a2a_client_errors.testing import FakeClock, RecordingHook
from tests.conftest import agent_unavailable

ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t1", "status": {"state": "x"}}}}


class Hook(RecordingHook):
    """RecordingHook that keeps unknown outcomes too."""

    def __init__(self) -> None:
        super().__init__()
        self.unknowns: list[UnknownOutcomeEvent] = []

    def on_unknown_outcome(self, event: UnknownOutcomeEvent) -> None:
        """Keep an unknown outcome's resolution."""
        self.unknowns.append(event)

    @property
    def resolutions(self) -> list[Resolution]:
        """The resolutions told, in order."""
        return [event.resolution for event in self.unknowns]


class Budget:
    """A budget that counts what the Guard asks of it."""

    def __init__(self, *, pays: bool = True) -> None:
        self.pays = pays
        self.spent = 0
        self.credits = 0

    def try_spend(self) -> bool:
        """Count a spend; pay it when told to."""
        self.spent += 1
        return self.pays

    def credit(self) -> None:
        """Count a credit."""
        self.credits += 1

    @property
    def tokens(self) -> float:
        """Tokens left (not modelled)."""
        return 1.0


class Peer:
    """A scripted attempt: each call returns or raises the next outcome; the last repeats."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def next(self) -> object:
        """The next outcome (raised when it is an exception)."""
        self.calls += 1
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def __call__(self) -> object:
        """One sync attempt."""
        return self.next()

    async def acall(self) -> object:
        """One async attempt."""
        await asyncio.sleep(0)
        return self.next()


class Looker:
    """A look-up that answers the given results in turn and records the time it was given."""

    def __init__(self, *results: object) -> None:
        self.results = list(results)
        self.times: list[float | None] = []

    def __call__(self, time_left: float | None) -> Any:
        """One look."""
        self.times.append(time_left)
        result = self.results.pop(0) if len(self.results) > 1 else self.results[0]
        if isinstance(result, BaseException):
            raise result
        return result

    async def acall(self, time_left: float | None) -> Any:
        """One async look."""
        await asyncio.sleep(0)
        return self(time_left)


def lost() -> httpx.ReadError:
    """An answer lost after the request went out: the outcome is unknown."""
    return httpx.ReadError("connection reset while reading the answer")


@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    """A fake clock that sleeps instantly."""
    return FakeClock()


def guard(clock: FakeClock, hook: Hook | None = None, **kwargs: Any) -> Guard:
    """A Guard on the fake clock, with a hook and no jitter."""
    return Guard(
        clock=clock,
        sleep=clock.sleep,
        random=lambda: 0.0,
        hooks=[hook] if hook is not None else [],
        **kwargs,
    )


async def run(mode: str, g: Guard, attempt: Peer, looker: Looker | None, **kwargs: Any) -> object:
    """Run the call the sync or the async way."""
    kwargs.setdefault("operation", "SendMessage")
    if mode == "sync":
        return g.call(attempt, lookup=looker, **kwargs)
    lookup = None if looker is None else looker.acall
    return await g.acall(attempt.acall, lookup=lookup, **kwargs)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


# --- found ---------------------------------------------------------------------------------------


@MODES
async def test_found_is_the_answer_after_one_attempt(mode: str, clock: FakeClock) -> None:
    """The look-up found the task: its answer is returned, nothing is resent."""
    hook, budget = Hook(), Budget()
    g = guard(clock, hook, budget=budget)
    peer, looker = Peer(lost(), ANSWER), Looker(Found("the lost answer"))
    assert await run(mode, g, peer, looker) == "the lost answer"
    assert peer.calls == 1
    assert len(looker.times) == 1
    assert hook.resolutions == [Resolution.FOUND]
    event = hook.unknowns[0]
    assert (event.operation, event.attempt, event.why) == ("SendMessage", 1, "")
    assert event.decision.action is Action.RETRY
    assert event.decision.delivery is Delivery.UNKNOWN
    # The attempt's error is told as any other (one error per attempt), then the ok call.
    assert hook.names() == ["decision", "decision"]
    assert hook.actions == ["retry", "ok"]
    assert budget.credits == 1
    assert budget.spent == 0  # the look-up draws on its own allowance, not the retry budget


@MODES
async def test_found_on_the_last_attempt_is_the_answer(mode: str, clock: FakeClock) -> None:
    """With no attempt left, a found task is still the answer (not RetryExhausted)."""
    hook = Hook()
    g = guard(clock, hook, max_attempts=1)
    peer = Peer(lost())
    assert await run(mode, g, peer, Looker(Found("answer"))) == "answer"
    assert hook.resolutions == [Resolution.FOUND]


# --- not found -----------------------------------------------------------------------------------


@MODES
async def test_not_found_is_resent(mode: str, clock: FakeClock) -> None:
    """A look-up of the caller's own that proves absence: the same call is sent again."""
    hook, budget = Hook(), Budget()
    g = guard(clock, hook, budget=budget)
    peer, looker = Peer(lost(), "second"), Looker(NotFound())
    assert await run(mode, g, peer, looker) == "second"
    assert peer.calls == 2
    assert hook.resolutions == [Resolution.RESENT]
    assert hook.names() == ["decision", "retry", "decision"]
    assert budget.spent == 1  # the resend only: the look-up is not paid from the budget


@MODES
async def test_not_found_without_attempts_left_is_retry_exhausted(
    mode: str, clock: FakeClock
) -> None:
    """Not found and no attempt left: the ordinary RetryExhausted, told NOT_FOUND."""
    hook = Hook()
    g = guard(clock, hook, max_attempts=2)
    peer, looker = Peer(lost()), Looker(NotFound())
    with pytest.raises(RetryExhausted) as caught:
        await run(mode, g, peer, looker)
    assert type(caught.value) is RetryExhausted
    assert caught.value.decision.give_up is GiveUp.ATTEMPTS
    assert caught.value.maybe_processed
    assert isinstance(caught.value.__cause__, httpx.ReadError)
    assert peer.calls == 2
    assert len(looker.times) == 2
    assert hook.resolutions == [Resolution.RESENT, Resolution.NOT_FOUND]
    assert hook.names()[-1] == "give_up"


@MODES
async def test_not_found_and_the_budget_refuses_is_outcome_unknown(
    mode: str, clock: FakeClock
) -> None:
    """Absent, but the budget refuses the resend: OutcomeUnknown (not BudgetExhausted)."""
    hook = Hook()
    g = guard(clock, hook, budget=Budget(pays=False))
    peer = Peer(lost(), "never")
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, g, peer, Looker(NotFound()))
    assert peer.calls == 1
    assert caught.value.decision.give_up is GiveUp.OUTCOME_UNKNOWN
    assert caught.value.why == "the retry budget is spent: nothing was resent"
    assert hook.resolutions == [Resolution.UNRESOLVED]


@MODES
async def test_a_spent_budget_still_looks_up(mode: str, clock: FakeClock) -> None:
    """A lost answer is looked up even with the retry budget spent: found, it is the answer."""
    hook = Hook()
    g = guard(clock, hook, budget=Budget(pays=False))
    peer, looker = Peer(lost(), "never"), Looker(Found("the lost answer"))
    assert await run(mode, g, peer, looker) == "the lost answer"
    assert peer.calls == 1
    assert len(looker.times) == 1
    assert hook.resolutions == [Resolution.FOUND]


@MODES
async def test_a_spent_budget_and_nothing_found_is_outcome_unknown(
    mode: str, clock: FakeClock
) -> None:
    """Budget spent and the look-up finds nothing: OutcomeUnknown with the look-up's why."""
    hook = Hook()
    g = guard(clock, hook, budget=Budget(pays=False))
    peer = Peer(lost(), "never")
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, g, peer, Looker(Unresolved("not found")))
    assert peer.calls == 1
    assert caught.value.why == "not found"
    assert hook.resolutions == [Resolution.UNRESOLVED]


# --- cannot look ---------------------------------------------------------------------------------


@MODES
async def test_unresolved_is_outcome_unknown_without_a_resend(mode: str, clock: FakeClock) -> None:
    """The look-up could not tell: OutcomeUnknown with the why, and one attempt only."""
    hook = Hook()
    g = guard(clock, hook)
    peer = Peer(lost(), "never")
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, g, peer, Looker(Unresolved("ListTasks is not supported")))
    failure = caught.value
    assert peer.calls == 1
    assert failure.why == "ListTasks is not supported"
    assert failure.sent is None  # Guard.call is not told what was sent
    assert failure.message_id is None
    assert failure.maybe_processed
    assert failure.attempts == 1
    assert failure.decision.give_up is GiveUp.OUTCOME_UNKNOWN
    assert failure.decision.delivery is Delivery.UNKNOWN
    assert isinstance(failure.__cause__, httpx.ReadError)
    assert hook.resolutions == [Resolution.UNRESOLVED]
    assert hook.unknowns[0].why == "ListTasks is not supported"
    assert hook.names() == ["decision", "give_up"]


@MODES
async def test_no_lookup_is_outcome_unknown(mode: str, clock: FakeClock) -> None:
    """A SendMessage without a look-up is never resent after a lost answer."""
    peer = Peer(lost(), "never")
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, guard(clock), peer, None)
    assert peer.calls == 1
    assert "no look-up" in caught.value.why


@MODES
async def test_a_lookup_that_raises_is_outcome_unknown(mode: str, clock: FakeClock) -> None:
    """A look-up that fails could not look: OutcomeUnknown naming the failure, no resend."""
    peer = Peer(lost(), "never")
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, guard(clock), peer, Looker(httpx.ConnectError("down")))
    assert peer.calls == 1
    assert "ConnectError" in caught.value.why


def test_a_coroutine_lookup_in_call_is_a_type_error(clock: FakeClock) -> None:
    """A look-up that returns an awaitable in call() is misuse, said as such."""

    async def look(time_left: float | None) -> Any:
        return NotFound()

    with pytest.raises(TypeError, match="acall"):
        guard(clock).call(Peer(lost()), operation="SendMessage", lookup=look)


async def test_a_lookup_too_slow_in_acall_is_outcome_unknown(clock: FakeClock) -> None:
    """A look-up that outlasts ExactlyOnce.timeout is cut off: OutcomeUnknown, no resend."""
    never = asyncio.Event()

    async def look(time_left: float | None) -> Any:
        await never.wait()
        return NotFound()  # pragma: no cover (never reached)

    g = guard(clock, exactly_once=ExactlyOnce(timeout=0.02))
    peer = Peer(lost(), "never")
    with pytest.raises(OutcomeUnknown) as caught:
        await g.acall(peer.acall, operation="SendMessage", lookup=look)
    assert peer.calls == 1
    assert "in time" in caught.value.why


@MODES
async def test_no_time_left_to_look_is_outcome_unknown(mode: str, clock: FakeClock) -> None:
    """An attempt that used up the deadline leaves no time to look: OutcomeUnknown."""

    class Slow(Peer):
        def next(self) -> object:
            clock.advance(10.0)
            return super().next()

    g = guard(clock, deadline=5.0)
    looker = Looker(Found("x"))
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, g, Slow(lost()), looker)
    assert looker.times == []
    assert "deadline" in caught.value.why


@MODES
async def test_lookup_time_is_capped_by_timeout_and_deadline(mode: str, clock: FakeClock) -> None:
    """The look-up is given ExactlyOnce.timeout, or less when the deadline is nearer."""
    g = guard(clock, exactly_once=ExactlyOnce(timeout=3.0))
    looker = Looker(Found("x"))
    await run(mode, g, Peer(lost()), looker)
    g = guard(clock, deadline=30.0, exactly_once=ExactlyOnce(timeout=60.0))
    await run(mode, g, Peer(lost()), looker)
    assert looker.times == [3.0, 30.0]


# --- resent without a look-up --------------------------------------------------------------------


@MODES
async def test_deduplicating_peer_is_resent_at_once(mode: str, clock: FakeClock) -> None:
    """A peer declared to deduplicate: resent without a look-up, told DEDUPLICATING."""
    hook = Hook()
    g = guard(clock, hook, exactly_once=ExactlyOnce(deduplicating={"agent-a"}))
    peer, looker = Peer(lost(), "second"), Looker(Found("never"))
    assert await run(mode, g, peer, looker, peer="agent-a") == "second"
    assert peer.calls == 2
    assert looker.times == []
    assert hook.resolutions == [Resolution.DEDUPLICATING]


@MODES
async def test_deduplicating_peer_without_attempts_left_is_looked_up(
    mode: str, clock: FakeClock
) -> None:
    """No resend follows for a deduplicating peer: its task is looked for as any other's."""
    hook = Hook()
    g = guard(clock, hook, max_attempts=1, exactly_once=ExactlyOnce(deduplicating=lambda p: True))
    assert await run(mode, g, Peer(lost()), Looker(Found("its task"))) == "its task"
    assert hook.resolutions == [Resolution.FOUND]
    with pytest.raises(OutcomeUnknown):  # and without a look-up, the outcome stays unknown
        await run(mode, g, Peer(lost()), None)


@MODES
async def test_a_deduplicating_peer_with_the_budget_spent_is_looked_up(
    mode: str, clock: FakeClock
) -> None:
    """No token for the resend: its task is looked for, and unfound is OutcomeUnknown."""
    hook = Hook()
    declared = ExactlyOnce(deduplicating={"agent-a"})
    g = guard(clock, hook, budget=Budget(pays=False), exactly_once=declared)
    looker = Looker(Unresolved("not found"))
    with pytest.raises(OutcomeUnknown) as caught:
        await run(mode, g, Peer(lost(), "never"), looker, peer="agent-a")
    assert len(looker.times) == 1
    assert caught.value.why == "not found"
    assert hook.resolutions == [Resolution.UNRESOLVED]
    found = Looker(Found("its task"))
    assert await run(mode, g, Peer(lost()), found, peer="agent-a") == "its task"
    assert hook.resolutions[-1] is Resolution.FOUND


@MODES
async def test_other_peers_of_a_deduplicating_set_are_looked_up(
    mode: str, clock: FakeClock
) -> None:
    """Only the declared peers skip the look-up."""
    g = guard(clock, exactly_once=ExactlyOnce(deduplicating={"agent-a"}))
    looker = Looker(Found("found"))
    assert await run(mode, g, Peer(lost()), looker, peer="agent-b") == "found"


@MODES
async def test_a_read_with_an_unknown_outcome_is_retried_without_a_look(
    mode: str, clock: FakeClock
) -> None:
    """GetTask creates no work: a lost answer is simply retried."""
    hook = Hook()
    g = guard(clock, hook)
    peer, looker = Peer(lost(), "task"), Looker(Found("never"))
    assert await run(mode, g, peer, looker, operation="GetTask") == "task"
    assert peer.calls == 2
    assert looker.times == []
    assert hook.resolutions == []


@MODES
async def test_a_call_without_an_operation_is_retried_without_a_look(
    mode: str, clock: FakeClock
) -> None:
    """A call that names no operation is not known to create work: retried as before."""
    peer = Peer(lost(), "done")
    assert await run(mode, guard(clock), peer, None, operation=None) == "done"
    assert peer.calls == 2


@MODES
@pytest.mark.parametrize(
    "refusal",
    [agent_unavailable(), httpx.Response(503, headers={"Retry-After": "1"})],
    ids=["status-body", "retry-after"],
)
async def test_not_processed_503_on_a_send_is_retried_without_a_look(
    mode: str, refusal: httpx.Response, clock: FakeClock
) -> None:
    """A 503 the agent says itself refused the send: retried at once, not maybe processed."""
    hook = Hook()
    g = guard(clock, hook, max_attempts=2)
    peer, looker = Peer(refusal), Looker(Found("never"))
    with pytest.raises(RetryExhausted) as caught:
        await run(mode, g, peer, looker)
    assert peer.calls == 2
    assert looker.times == []
    assert not caught.value.maybe_processed
    assert caught.value.decision.delivery is Delivery.NOT_PROCESSED
    assert all(e.decision.delivery is Delivery.NOT_PROCESSED for e in hook.decisions)


@MODES
@pytest.mark.parametrize(
    "bare",
    [
        httpx.Response(503),
        httpx.Response(503, text="upstream connect error or disconnect/reset before headers"),
        httpx.Response(503, html="<html><body>503 Service Unavailable</body></html>"),
    ],
    ids=["empty", "text", "html"],
)
async def test_a_bare_503_on_a_send_is_looked_up_before_a_resend(
    mode: str, bare: httpx.Response, clock: FakeClock
) -> None:
    """A bare 503 may come after the request was forwarded: looked up, resent when not there."""
    hook = Hook()
    g = guard(clock, hook)
    peer, looker = Peer(bare, ANSWER), Looker(NotFound())
    assert await run(mode, g, peer, looker) == ANSWER
    assert peer.calls == 2
    assert len(looker.times) >= 1
    assert hook.decisions[0].decision.delivery is Delivery.UNKNOWN
    assert hook.resolutions == [Resolution.RESENT]


@MODES
async def test_a_bare_503_on_a_read_is_retried_without_a_look(mode: str, clock: FakeClock) -> None:
    """GetTask after a bare 503: retried at once, whatever reached the agent."""
    peer, looker = Peer(httpx.Response(503), "task"), Looker(Found("never"))
    assert await run(mode, guard(clock), peer, looker, operation="GetTask") == "task"
    assert peer.calls == 2
    assert looker.times == []


@MODES
async def test_not_sent_connect_error_on_a_send_is_retried_without_a_look(
    mode: str, clock: FakeClock
) -> None:
    """A connect error never left this machine: retried without a look-up."""
    peer, looker = Peer(httpx.ConnectError("refused"), "ok"), Looker(Found("never"))
    assert await run(mode, guard(clock), peer, looker) == "ok"
    assert looker.times == []


@MODES
async def test_maybe_processed_after_an_unknown_earlier_attempt(
    mode: str, clock: FakeClock
) -> None:
    """A later refusal still says an earlier attempt may have been processed."""
    refused = httpx.Response(400, json={"error": {"code": 400, "status": "INVALID_ARGUMENT"}})
    peer = Peer(lost(), refused)
    with pytest.raises(FixRequestNeeded) as caught:
        await run(mode, guard(clock), peer, Looker(NotFound()))
    assert caught.value.maybe_processed
    assert caught.value.decision.delivery is Delivery.NOT_PROCESSED
    peer = Peer(agent_unavailable(), refused)
    with pytest.raises(FixRequestNeeded) as caught:
        await run(mode, guard(clock), peer, Looker(NotFound()))
    assert not caught.value.maybe_processed


def test_call_shape_makes_work() -> None:
    """CallShape creates work for the send operations, or as it is told."""
    assert CallShape("SendMessage").makes_work
    assert CallShape("SendStreamingMessage").makes_work
    assert not CallShape("GetTask").makes_work
    assert not CallShape(None).makes_work
    assert CallShape(None, creates_work=True).makes_work
    assert not CallShape("SendMessage", creates_work=False).makes_work


# --- the deadline cuts an attempt short ----------------------------------------------------------


async def test_deadline_cuts_an_acall_attempt_short_then_looks_within_the_reserve() -> None:
    """A hung attempt is cut at the deadline less the reserve; the look-up runs after it."""
    never = asyncio.Event()
    attempts: list[int] = []

    async def hangs() -> object:
        attempts.append(1)
        await never.wait()
        return "never"  # pragma: no cover (never reached)

    hook = Hook()
    looker = Looker(Found("found after the cut"))
    g = Guard(deadline=0.2, hooks=[hook], exactly_once=ExactlyOnce(reserve=0.25))
    result = await g.acall(hangs, operation="SendMessage", lookup=looker.acall)
    assert result == "found after the cut"
    assert attempts == [1]
    (time_left,) = looker.times
    assert time_left is not None
    assert 0 < time_left <= 0.2 * 0.25 + 0.01
    assert hook.resolutions == [Resolution.FOUND]
    assert hook.unknowns[0].decision.error is not None
    assert hook.unknowns[0].decision.error.exception is not None
    assert "AttemptCutShortError" in hook.unknowns[0].decision.error.exception


async def test_deadline_cut_of_a_read_is_retried_or_given_up_not_looked_up() -> None:
    """A read cut short by the deadline is a plain timeout: it gives up with no look-up."""
    never = asyncio.Event()

    async def hangs() -> object:
        await never.wait()
        return "never"  # pragma: no cover (never reached)

    looker = Looker(Found("never"))
    g = Guard(deadline=0.05)
    with pytest.raises(RetryExhausted):
        await g.acall(hangs, operation="GetTask", lookup=looker.acall)
    assert looker.times == []


# --- a resend is told when it goes out, and only then ---------------------------------------------


class Breaker:
    """A breaker that admits the first ``admits`` attempts, then refuses (open)."""

    def __init__(self, admits: int) -> None:
        self.admits = admits
        self.asked = 0

    def admit(self, peer: str) -> Admission:
        """Admit while allowed, then refuse with the peer open."""
        self.asked += 1
        if self.asked <= self.admits:
            return Admission(True)
        return Admission(False, state=BreakerState.OPEN, retry_in=30.0)

    def record(
        self, peer: str, verdict: Verdict, *, probe: bool = False, retry_after: float | None = None
    ) -> None:
        """Verdicts are not modelled."""

    def state(self, peer: str) -> BreakerState:
        """Open once it refused."""
        return BreakerState.OPEN if self.asked > self.admits else BreakerState.CLOSED


class SlowLooker(Looker):
    """A look-up that finds nothing by the caller's word, and takes ``seconds`` of fake time."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        super().__init__(NotFound())
        self.clock = clock
        self.seconds = seconds

    def __call__(self, time_left: float | None) -> Any:
        """One look, the clock moved on by its duration."""
        self.clock.advance(self.seconds)
        return super().__call__(time_left)


def _telling(clock: FakeClock, **kwargs: Any) -> tuple[Guard, Hook, CollectorRegistry]:
    """A Guard whose hooks record, log and count unknown outcomes."""
    hook, registry = Hook(), CollectorRegistry()
    g = Guard(
        clock=clock,
        sleep=clock.sleep,
        random=lambda: 0.0,
        hooks=[hook, LoggingHook(), PrometheusHook(registry=registry)],
        **kwargs,
    )
    return g, hook, registry


def _told(registry: CollectorRegistry, caplog: pytest.LogCaptureFixture) -> tuple[float, int]:
    """How many resends the metrics counted, and how many the log said."""
    counted = sum(
        sample.value
        for metric in registry.collect()
        for sample in metric.samples
        if sample.name == "a2a_client_unknown_outcomes_total"
        and sample.labels["resolution"] == "resent"
    )
    logged = [r for r in caplog.records if getattr(r, "resolution", None) == "resent"]
    return counted, len(logged)


@MODES
async def test_a_resend_the_breaker_stops_is_not_told_as_resent(
    mode: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Absent by the caller's word, but the breaker opens before the resend: nothing resent.

    The look-up allows the resend; the breaker refuses it. No log line and no count says
    "resent"; the hooks hear "not_found" once, and the record says so.
    """
    g, hook, registry = _telling(clock, breaker=Breaker(admits=1))
    peer = Peer(lost(), "never")
    with (
        caplog.at_level(logging.INFO, logger="a2a_client_errors"),
        pytest.raises(PeerUnavailable) as caught,
    ):
        await run(mode, g, peer, Looker(NotFound()))
    assert peer.calls == 1
    assert hook.resolutions == [Resolution.NOT_FOUND]
    assert caught.value.record is not None
    assert caught.value.record.resolution is Resolution.NOT_FOUND
    assert _told(registry, caplog) == (0.0, 0)


@MODES
async def test_a_resend_the_deadline_stops_is_not_told_as_resent(
    mode: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The look-up took the time the resend needed: the call gives up at its deadline.

    The retry was planned before the look-up, with 10 s left; the look-up searched until the
    deadline before it answered "absent", so no resend can start: nothing is sent again, no
    token is spent, nothing says "resent".
    """
    budget = Budget()
    g, hook, registry = _telling(clock, budget=budget, deadline=10.0)
    peer = Peer(lost(), "never")
    with (
        caplog.at_level(logging.INFO, logger="a2a_client_errors"),
        pytest.raises(DeadlineExceeded) as caught,
    ):
        await run(mode, g, peer, SlowLooker(clock, 10.0))
    assert caught.value.decision.give_up is GiveUp.DEADLINE
    assert peer.calls == 1
    assert budget.spent == 0
    assert hook.resolutions == [Resolution.NOT_FOUND]
    assert _told(registry, caplog) == (0.0, 0)


@MODES
async def test_a_resend_the_budget_refuses_is_not_told_as_resent(
    mode: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Absent by the caller's word, and the budget pays for no resend: told unresolved."""
    g, hook, registry = _telling(clock, budget=Budget(pays=False))
    peer = Peer(lost(), "never")
    with caplog.at_level(logging.INFO, logger="a2a_client_errors"), pytest.raises(OutcomeUnknown):
        await run(mode, g, peer, Looker(NotFound()))
    assert peer.calls == 1
    assert hook.resolutions == [Resolution.UNRESOLVED]
    assert _told(registry, caplog) == (0.0, 0)


@MODES
async def test_a_resend_that_goes_out_is_told_once_as_it_goes(
    mode: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The resend is sent: one "resent" in the hooks, the log and the metrics, after the retry.

    The breaker admits it; the hooks hear of it once the retry was decided and the breaker
    let it go, not at the look-up's verdict.
    """
    g, hook, registry = _telling(clock, breaker=Breaker(admits=2))
    peer = Peer(lost(), "second")
    with caplog.at_level(logging.INFO, logger="a2a_client_errors"):
        assert await run(mode, g, peer, Looker(NotFound())) == "second"
    assert peer.calls == 2
    assert hook.resolutions == [Resolution.RESENT]
    assert _told(registry, caplog) == (1.0, 1)
    messages = [r.getMessage() for r in caplog.records if r.name == "a2a_client_errors.decisions"]
    assert "retry in" in messages[0]
    assert "the same message sent again" in messages[1]

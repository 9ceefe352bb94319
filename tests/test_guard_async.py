"""Guard.acall: the async mirror of test_guard_sync.py, on a fake clock (never a real sleep).

The fake sleep here is a coroutine function that records the delay, advances the fake clock
and yields to the loop, so the Guard's awaited-sleep path is the one exercised (a sync
``FakeClock.sleep`` is checked too).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, CallFailed, CircuitBreaker, Decision, Policy, Reason
from a2a_client_errors._failures import (
    AuthFailed,
    BudgetExhausted,
    DeadlineExceeded,
    DegradeNeeded,
    FixRequestNeeded,
    ReconcileNeeded,
    ReportNeeded,
    RetryAfterTooLong,
    RetryExhausted,
)
from a2a_client_errors._guard import Guard, GuardEvent, Hook
from a2a_client_errors._policy import GiveUp
from a2a_client_errors._retry import Backoff, BudgetRegistry, RetryBudget
from a2a_client_errors.integrations.redis import (
    RedisCircuitBreaker,
    RedisPeerBudget,
    RedisRetryBudget,
)
from a2a_client_errors.testing import FakeClock, RecordingHook, error_response, set_testing
from a2a_client_errors.types import (
    AsyncCircuitBreakerLike,
    AsyncRetryBudgetLike,
    BreakerFallbacksLike,
    BreakerTransitionsLike,
    BudgetFallbacksLike,
    RefundableBudgetLike,
)
from tests.conftest import agent_unavailable, jsonrpc_error, jsonrpc_result

OK = jsonrpc_result({"id": "task-1", "status": {"state": "TASK_STATE_COMPLETED"}})
SECRET = "Bearer tok-SECRET-4f1c"
BODY_MARKER = "BODY-MARKER-8d2e"


class AsyncPeer:
    """A scripted async peer: each await returns (or raises) the next outcome; the last repeats."""

    def __init__(self, *outcomes: object, clock: FakeClock | None = None, takes: float = 0.0):
        self.outcomes = list(outcomes)
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.starts: list[float] = []
        self.clock = clock
        self.takes = takes

    async def __call__(self, *args: Any, **kwargs: Any) -> object:
        """One attempt: record the arguments and the start, then answer."""
        self.calls.append((args, kwargs))
        await asyncio.sleep(0)
        if self.clock is not None:
            self.starts.append(self.clock.now())
            self.clock.advance(self.takes)
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class Exploding(Hook):
    """A hook whose every method raises."""

    def on_decision(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("hook on_decision exploded")

    def on_retry(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("hook on_retry exploded")

    def on_give_up(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("hook on_give_up exploded")


class AsyncFakeClock(FakeClock):
    """A FakeClock whose ``asleep`` is a coroutine function: records, advances, yields."""

    async def asleep(self, seconds: float) -> None:
        """Record the delay, advance the clock, yield to the loop."""
        self.sleep(seconds)
        await asyncio.sleep(0)


def _503(retry_after: float | None = None) -> httpx.Response:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return httpx.Response(503, headers=headers)


@pytest.fixture(name="clock")
def clock_fixture() -> AsyncFakeClock:
    """A fresh fake clock."""
    return AsyncFakeClock()


def make_guard(clock: AsyncFakeClock, **kwargs: Any) -> Guard:
    """A Guard on the fake clock with an async sleep and a deterministic draw of 0.5."""
    kwargs.setdefault("random", lambda: 0.5)
    kwargs.setdefault("sleep", clock.asleep)
    return Guard(clock=clock.now, **kwargs)


# --- the happy path and the plain failures ----------------------------------------------------


async def test_success_returns_the_value_after_one_attempt(clock: AsyncFakeClock) -> None:
    """A result is returned as it is, after one attempt and no sleep."""
    peer = AsyncPeer(OK)
    assert await make_guard(clock).acall(peer, operation="GetTask") is OK
    assert len(peer.calls) == 1
    assert clock.sleeps == []


async def test_a_sync_fn_works_in_acall(clock: AsyncFakeClock) -> None:
    """A plain function, and one returning an awaitable, both work in acall."""
    guard = make_guard(clock)
    assert await guard.acall(lambda: OK) is OK
    outcomes = iter([_503(), OK])

    def returns_awaitable() -> Any:
        future = asyncio.get_running_loop().create_future()
        future.set_result(next(outcomes))
        return future

    assert await guard.acall(returns_awaitable) is OK


async def test_503_is_retried_until_attempts_run_out(clock: AsyncFakeClock) -> None:
    """A 503 is retried; after max_attempts RetryExhausted carries the last response."""
    last = _503()
    peer = AsyncPeer(_503(), _503(), last)
    with pytest.raises(RetryExhausted) as caught:
        await make_guard(clock).acall(peer, operation="GetTask")
    failure = caught.value
    assert type(failure) is RetryExhausted
    assert failure.attempts == 3
    assert failure.result is last
    assert failure.decision.give_up is GiveUp.ATTEMPTS
    assert clock.sleeps == [0.25, 0.5]


async def test_a_sync_sleep_works_in_acall(clock: AsyncFakeClock) -> None:
    """A sync sleep= (FakeClock.sleep) is called, not awaited, in acall."""
    guard = make_guard(clock, sleep=clock.sleep)
    assert await guard.acall(AsyncPeer(_503(), OK)) is OK
    assert clock.sleeps == [0.25]


async def test_connect_error_is_retried_and_chained(clock: AsyncFakeClock) -> None:
    """A raised ConnectError is retried; the final failure's __cause__ is the last one raised."""
    errors = [httpx.ConnectError(f"refused {i}") for i in range(3)]
    peer = AsyncPeer(*errors)
    with pytest.raises(RetryExhausted) as caught:
        await make_guard(clock).acall(peer)
    assert caught.value.__cause__ is errors[-1]
    assert len(peer.calls) == 3


async def test_jsonrpc_internal_error_on_200_is_retried(clock: AsyncFakeClock) -> None:
    """A JSON-RPC -32603 body (HTTP 200) is a retry."""
    peer = AsyncPeer(jsonrpc_error(-32603, "internal"), OK)
    assert await make_guard(clock).acall(peer) is OK
    assert len(peer.calls) == 2


async def test_401_makes_one_attempt_without_refresh(clock: AsyncFakeClock) -> None:
    """401 is auth: one attempt, AuthFailed, no sleep."""
    peer = AsyncPeer(httpx.Response(401))
    with pytest.raises(AuthFailed) as caught:
        await make_guard(clock).acall(peer)
    assert caught.value.attempts == 1
    assert len(peer.calls) == 1
    assert clock.sleeps == []


async def test_401_async_refresh_once_then_gives_up(clock: AsyncFakeClock) -> None:
    """An async refresh_credentials is awaited once; one resend; then AuthFailed."""
    refreshed: list[Decision] = []

    async def refresh(decision: Decision) -> bool:
        refreshed.append(decision)
        await asyncio.sleep(0)
        return True

    peer = AsyncPeer(httpx.Response(401))
    with pytest.raises(AuthFailed) as caught:
        await make_guard(clock, refresh_credentials=refresh).acall(peer)
    assert len(refreshed) == 1
    assert len(peer.calls) == 2
    assert caught.value.attempts == 2
    assert clock.sleeps == []


async def test_401_sync_refresh_works_in_acall(clock: AsyncFakeClock) -> None:
    """A sync refresh_credentials works in acall; a successful resend returns the result."""
    calls: list[Decision] = []

    def refresh(decision: Decision) -> bool:
        calls.append(decision)
        return True

    peer = AsyncPeer(httpx.Response(401), OK)
    guard = make_guard(clock, refresh_credentials=refresh)
    assert await guard.acall(peer) is OK
    assert len(calls) == 1


async def test_401_refresh_returning_false_gives_up_at_once(clock: AsyncFakeClock) -> None:
    """An async refresh that returns False ends the call after one attempt."""

    async def refresh(decision: Decision) -> bool:
        return False

    peer = AsyncPeer(httpx.Response(401), OK)
    with pytest.raises(AuthFailed) as caught:
        await make_guard(clock, refresh_credentials=refresh).acall(peer)
    assert len(peer.calls) == 1
    assert caught.value.attempts == 1


async def test_400_makes_one_attempt(clock: AsyncFakeClock) -> None:
    """400 is fix_request: one attempt, FixRequestNeeded."""
    peer = AsyncPeer(httpx.Response(400))
    with pytest.raises(FixRequestNeeded) as caught:
        await make_guard(clock).acall(peer)
    assert caught.value.attempts == 1
    assert len(peer.calls) == 1
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("reason", "failure"),
    [
        (Reason.TASK_NOT_FOUND, ReconcileNeeded),
        (Reason.UNSUPPORTED_OPERATION, DegradeNeeded),
        (Reason.VERSION_NOT_SUPPORTED, FixRequestNeeded),
        (Reason.INVALID_AGENT_RESPONSE, ReportNeeded),
    ],
)
@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
async def test_call_errors_end_the_call_with_their_action(
    clock: AsyncFakeClock, reason: Reason, failure: type[CallFailed], binding: str
) -> None:
    """Each non-retry reason ends the call at once with the exception of its action."""
    peer = AsyncPeer(error_response(reason, binding=binding))
    with pytest.raises(failure) as caught:
        await make_guard(clock).acall(peer, operation="GetTask")
    assert type(caught.value) is failure
    assert caught.value.reason is reason
    assert len(peer.calls) == 1


async def test_retry_after_two_sleeps_at_least_two_seconds(clock: AsyncFakeClock) -> None:
    """503 with Retry-After: 2 is retried after a sleep of at least 2 s."""
    peer = AsyncPeer(_503(2), OK)
    assert await make_guard(clock).acall(peer) is OK
    assert len(peer.calls) == 2
    assert len(clock.sleeps) == 1
    assert clock.sleeps[0] >= 2


@pytest.mark.parametrize("deadline", [None, 30.0, 7200.0])
async def test_retry_after_past_the_limit_gives_up_without_sleeping(
    clock: AsyncFakeClock, deadline: float | None
) -> None:
    """Retry-After above max_retry_after: RetryAfterTooLong (HINT_TOO_LONG) at once.

    With no deadline at all, and with one the hint would pass or not: the cap decides first.
    """
    peer = AsyncPeer(_503(3600), OK)
    with pytest.raises(RetryAfterTooLong) as caught:
        await make_guard(clock, deadline=deadline).acall(peer, operation="GetTask")
    failure = caught.value
    assert not isinstance(failure, DeadlineExceeded)
    assert failure.decision.give_up is GiveUp.HINT_TOO_LONG
    assert failure.retry_after == 3600
    assert failure.attempts == 1
    assert len(peer.calls) == 1
    assert clock.sleeps == []
    assert clock.now() == 0.0


async def test_a_hint_within_the_cap_past_the_deadline_is_deadline_exceeded(
    clock: AsyncFakeClock,
) -> None:
    """A 30 s hint (the cap is 60 s) under a 10 s deadline: the deadline gives up, not the cap."""
    peer = AsyncPeer(_503(30), OK)
    with pytest.raises(DeadlineExceeded) as caught:
        await make_guard(clock, deadline=10.0).acall(peer)
    assert caught.value.decision.give_up is GiveUp.DEADLINE
    assert not isinstance(caught.value, RetryAfterTooLong)
    assert clock.sleeps == []


async def test_deadline_gives_up_instead_of_sleeping_past_it(clock: AsyncFakeClock) -> None:
    """A hint that would end past the deadline raises DeadlineExceeded without sleeping."""
    peer = AsyncPeer(_503(2), OK)
    with pytest.raises(DeadlineExceeded) as caught:
        await make_guard(clock, deadline=1.5).acall(peer)
    assert caught.value.decision.give_up is GiveUp.DEADLINE
    assert clock.sleeps == []


async def test_slow_attempts_never_sleep_past_the_deadline(clock: AsyncFakeClock) -> None:
    """Attempts that take 2 s each under a 5 s deadline: every attempt starts before it."""
    peer = AsyncPeer(_503(), clock=clock, takes=2.0)
    with pytest.raises(DeadlineExceeded):
        await make_guard(clock, deadline=5.0, max_attempts=10).acall(peer)
    starts = [2.0 * k + sum(clock.sleeps[:k]) for k in range(len(peer.calls))]
    assert all(start < 5.0 for start in starts)


# --- what is and is not a call error ----------------------------------------------------------


async def test_a_bug_in_fn_propagates_unchanged(clock: AsyncFakeClock) -> None:
    """A ValueError raised by fn propagates as the same object, unwrapped."""
    bug = ValueError("bug in fn")
    peer = AsyncPeer(bug)
    with pytest.raises(ValueError, match="bug in fn") as caught:
        await make_guard(clock).acall(peer)
    assert caught.value is bug
    assert len(peer.calls) == 1


async def test_a_bug_on_a_retry_propagates_unchanged(clock: AsyncFakeClock) -> None:
    """A KeyError raised on the second attempt propagates as it is."""
    bug = KeyError("missing")
    peer = AsyncPeer(_503(), bug)
    with pytest.raises(KeyError) as caught:
        await make_guard(clock).acall(peer)
    assert caught.value is bug
    assert len(peer.calls) == 2


async def test_cancellation_propagates(clock: AsyncFakeClock) -> None:
    """asyncio.CancelledError from fn is not a call error: it goes straight through."""
    with pytest.raises(asyncio.CancelledError):
        await make_guard(clock).acall(AsyncPeer(asyncio.CancelledError()))


async def test_cancelling_a_task_during_the_backoff_sleep(clock: AsyncFakeClock) -> None:
    """A task cancelled while the Guard sleeps ends cancelled, without more attempts."""
    gate = asyncio.Event()

    async def blocking_sleep(seconds: float) -> None:
        gate.set()
        await asyncio.Event().wait()  # until cancelled

    peer = AsyncPeer(_503())
    task = asyncio.ensure_future(make_guard(clock, sleep=blocking_sleep).acall(peer))
    await asyncio.wait_for(gate.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(peer.calls) == 1


def test_call_given_a_coroutine_function_names_acall() -> None:
    """The sync door refuses a coroutine function, pointing at acall."""
    clock = AsyncFakeClock()

    async def fetch() -> object:
        return OK

    with pytest.raises(TypeError, match="acall"):
        make_guard(clock, sleep=clock.sleep).call(fetch)


async def test_same_arguments_on_every_attempt(clock: AsyncFakeClock) -> None:
    """Every attempt gets the very same positional and keyword argument objects."""
    message = {"messageId": "m-1", "parts": [{"text": "hi"}]}
    options = {"timeout": 3}
    peer = AsyncPeer(agent_unavailable(), agent_unavailable(), OK)
    await make_guard(clock).acall(peer, message, options=options, operation="SendMessage")
    assert len(peer.calls) == 3
    for args, kwargs in peer.calls:
        assert args[0] is message
        assert kwargs["options"] is options


async def test_concurrent_calls_have_separate_states(clock: AsyncFakeClock) -> None:
    """Interleaved calls on one Guard each get their own attempts."""
    guard = make_guard(clock, budget=RetryBudget(capacity=100))
    peers = [AsyncPeer(_503()) for _ in range(20)]
    results = await asyncio.gather(*(guard.acall(p) for p in peers), return_exceptions=True)
    assert all(type(r) is RetryExhausted for r in results)
    assert all(r.attempts == 3 for r in results if isinstance(r, CallFailed))
    assert all(len(p.calls) == 3 for p in peers)


# --- budget, hooks, override ------------------------------------------------------------------


async def test_budget_refusal_fails_fast_and_is_observed(clock: AsyncFakeClock) -> None:
    """An empty budget: BudgetExhausted after one attempt, no sleep, on_budget_exhausted told."""
    recorder = RecordingHook()
    guard = make_guard(clock, budget=RetryBudget(capacity=0), hooks=[recorder])
    with pytest.raises(BudgetExhausted) as caught:
        await guard.acall(AsyncPeer(_503()))
    assert caught.value.decision.give_up is GiveUp.BUDGET
    assert clock.sleeps == []
    assert recorder.names() == ["decision", "budget_exhausted", "give_up"]


async def test_hooks_see_every_decision_in_order(clock: AsyncFakeClock) -> None:
    """A 503 then a result: decision, retry, decision."""
    recorder = RecordingHook()
    await make_guard(clock, hooks=[recorder]).acall(AsyncPeer(_503(), OK), peer="peer-a")
    assert recorder.names() == ["decision", "retry", "decision"]
    assert recorder.events[1][1].decision.delay == 0.25
    assert recorder.events[2][1].decision.action is Action.OK


async def test_a_raising_hook_is_logged_and_swallowed(
    clock: AsyncFakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Hooks that raise change nothing; each failure is logged."""
    recorder = RecordingHook()
    guard = make_guard(clock, hooks=[Exploding(), recorder])
    with (
        caplog.at_level(logging.ERROR, logger="a2a_client_errors"),
        pytest.raises(RetryExhausted) as caught,
    ):
        await guard.acall(AsyncPeer(_503()))
    assert caught.value.attempts == 3
    assert recorder.names() == [
        "decision",
        "retry",
        "decision",
        "retry",
        "decision",
        "give_up",
    ]
    messages = " ".join(r.getMessage() for r in caplog.records)
    for name in ("on_decision", "on_retry", "on_give_up"):
        assert name in messages


async def test_hook_events_carry_no_request_body_or_credentials(clock: AsyncFakeClock) -> None:
    """Nothing of the request (its Authorization header, its body) appears in any event."""
    request = {
        "headers": {"Authorization": SECRET},
        "body": {"message": {"messageId": "m-1", "parts": [{"text": BODY_MARKER}]}},
    }
    recorder = RecordingHook()
    with pytest.raises(AuthFailed):
        await make_guard(clock, hooks=[recorder]).acall(
            AsyncPeer(_503(), httpx.Response(401)), request, token=SECRET
        )
    assert len(recorder.events) >= 4
    for _, event in recorder.events:
        text = repr(event) + str(event.decision) + repr(event.decision.to_dict())
        assert "tok-SECRET" not in text
        assert BODY_MARKER not in text


async def test_override_turns_reconcile_into_report(clock: AsyncFakeClock) -> None:
    """override= can make TASK_NOT_FOUND's reconcile a report."""

    def override(decision: Decision) -> Action | None:
        return Action.REPORT if decision.reason is Reason.TASK_NOT_FOUND else None

    with pytest.raises(ReportNeeded):
        await make_guard(clock, override=override).acall(AsyncPeer(jsonrpc_error(-32001, "x")))


async def test_override_turns_a_degrade_into_retry(clock: AsyncFakeClock) -> None:
    """override= can make a degrade a retry: it is retried until the result comes."""
    response = error_response(Reason.UNSUPPORTED_OPERATION)
    peer = AsyncPeer(response, OK)

    def override(decision: Decision) -> Action | None:
        return Action.RETRY if decision.action is Action.DEGRADE else None

    assert await make_guard(clock, override=override).acall(peer) is OK
    assert len(peer.calls) == 2


async def test_set_testing_skips_sleeps_and_caps_attempts() -> None:
    """Under set_testing(True, attempts=2) acall never sleeps and makes two attempts."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    guard = Guard(sleep=sleep, random=lambda: 0.5, max_attempts=5)
    with set_testing(True, attempts=2):
        peer = AsyncPeer(_503(20))
        with pytest.raises(RetryExhausted):
            await guard.acall(peer)
        assert len(peer.calls) == 2
    assert slept == []
    assert await guard.acall(AsyncPeer(_503(), OK)) is OK
    assert slept == [0.25]


# --- hypothesis: the async loop keeps the invariants ------------------------------------------

KINDS = ("ok", "503", "503+hint", "connect", "rpc-32603", "task-not-found", "401")
RETRYABLE = {"503", "503+hint", "connect", "rpc-32603"}


def _produce(kind: str, hint: int) -> object:
    if kind == "ok":
        return OK
    if kind == "503":
        return _503()
    if kind == "503+hint":
        return _503(hint)
    if kind == "connect":
        return httpx.ConnectError("refused")
    if kind == "rpc-32603":
        return jsonrpc_error(-32603, "internal")
    if kind == "task-not-found":
        return jsonrpc_error(-32001, "gone")
    return httpx.Response(401)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 90)), min_size=1),
    max_attempts=st.integers(1, 5),
    deadline=st.none() | st.floats(0.5, 30),
    initial=st.floats(0, 3),
    draws=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=5),
)
def test_acall_loop_invariants(
    script: list[tuple[str, int]],
    max_attempts: int,
    deadline: float | None,
    initial: float,
    draws: list[float],
) -> None:
    """Acall keeps the loop's invariants for any failure sequence (attempts, sleeps, failure)."""
    clock = AsyncFakeClock()
    backoff = Backoff(initial=initial, cap=10.0)
    draw = itertools.cycle(draws)
    guard = Guard(
        policy=Policy(backoff=backoff),
        budget=RetryBudget(capacity=1000),
        max_attempts=max_attempts,
        deadline=deadline,
        clock=clock.now,
        sleep=clock.asleep,
        random=lambda: next(draw),
    )
    outcomes = [_produce(kind, hint) for kind, hint in script] + [OK] * max_attempts
    steps = [*script, *[("ok", 0)] * max_attempts]
    peer = AsyncPeer(*outcomes, clock=clock)
    # The peer's script is padded with results, so it never runs out.
    try:
        result: object = asyncio.run(guard.acall(peer))
    except CallFailed as failure:
        result = failure
    n = len(peer.calls)
    assert n <= max_attempts
    assert all(kind in RETRYABLE for kind, _ in steps[: n - 1])
    for k in range(1, n):
        gap = peer.starts[k] - peer.starts[k - 1]
        kind, hint = steps[k - 1]
        floor = hint if kind == "503+hint" else 0.0
        assert floor - 1e-9 <= gap <= max(backoff.ceiling(k), floor) + 1e-9
    if deadline is not None:
        assert peer.starts[-1] <= deadline + 1e-9
    assert clock.now() == pytest.approx(peer.starts[-1])  # no sleep after the last attempt
    last, hint = steps[n - 1]
    if last == "ok":
        assert result is OK
        return
    assert isinstance(result, CallFailed)
    assert result.attempts == n
    decision = result.decision
    if decision.give_up is GiveUp.DEADLINE:
        assert type(result) is DeadlineExceeded
    elif decision.give_up is GiveUp.HINT_TOO_LONG:
        assert type(result) is RetryAfterTooLong
    elif decision.give_up is GiveUp.BUDGET:
        assert type(result) is BudgetExhausted
    elif decision.action is Action.RETRY:
        assert type(result) is RetryExhausted
        assert n == max_attempts
    else:
        assert last in {"task-not-found", "401"}
        assert type(result) is (ReconcileNeeded if last == "task-not-found" else AuthFailed)
    if last == "503+hint" and hint > 60 and n < max_attempts:
        assert decision.give_up is GiveUp.HINT_TOO_LONG


# --- budget tokens are spent by retries that are sent ---------------------------------------


async def test_callers_that_give_up_during_the_backoff_sleep_spend_no_retry_token(
    clock: AsyncFakeClock,
) -> None:
    """Ten callers cancelled in their backoff sleep leave a budget of ten as it was."""
    budget = RetryBudget(capacity=10)
    asleep: list[float] = []
    never = asyncio.Event()

    async def endless_sleep(seconds: float) -> None:
        asleep.append(seconds)
        await never.wait()  # the caller gives up first

    guard = make_guard(clock, budget=budget, sleep=endless_sleep)
    calls = [asyncio.ensure_future(guard.acall(AsyncPeer(_503(), OK))) for _ in range(10)]
    while len(asleep) < 10:
        await asyncio.sleep(0)
    assert budget.tokens == 0  # each sleeping caller holds the token of its retry
    for call in calls:
        call.cancel()  # what asyncio.wait_for does when its time is up
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)
    assert budget.tokens == 10
    assert await make_guard(clock, budget=budget).acall(AsyncPeer(_503(), OK)) is OK
    assert budget.tokens == 9.5  # a retry that is sent spends its token (and the success credits)


async def test_a_budget_without_refund_or_with_a_failing_one_never_hides_the_cancellation(
    clock: AsyncFakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """``refund`` is optional; one that raises is logged, and the cancellation propagates."""

    class Plain:
        tokens = 1.0

        def try_spend(self) -> bool:
            return True

        def credit(self) -> None:
            """Nothing to credit."""

    class Failing(Plain):
        def refund(self) -> None:
            raise RuntimeError("refund failed")

    async def cancelled_sleep(seconds: float) -> None:
        raise asyncio.CancelledError

    for budget in (Plain(), Failing()):
        guard = make_guard(clock, budget=budget, sleep=cancelled_sleep)
        with pytest.raises(asyncio.CancelledError):
            await guard.acall(AsyncPeer(_503(), OK))
    assert "refund failed" in caplog.text


async def test_a_third_party_budget_that_spends_async_is_awaited_and_typed(
    clock: AsyncFakeClock,
) -> None:
    """A budget with ``atry_spend`` is an AsyncRetryBudgetLike: acall awaits it, not try_spend."""
    spent: list[str] = []

    class Fleet:
        tokens = 0.0

        def try_spend(self) -> bool:
            spent.append("sync")
            return True

        async def atry_spend(self) -> bool:
            spent.append("async")
            return False

        def credit(self) -> None:
            """Nothing to credit."""

    budget = Fleet()
    assert isinstance(budget, AsyncRetryBudgetLike)
    assert not isinstance(budget, RefundableBudgetLike)
    guard = make_guard(clock, budget=budget)
    with pytest.raises(BudgetExhausted):
        await guard.acall(AsyncPeer(_503(), OK))
    assert spent == ["async"]


def test_the_shipped_budgets_and_breakers_are_typed_by_their_abilities() -> None:
    """Each ability the Guard uses is a protocol the shipped classes meet by their methods."""
    assert isinstance(RetryBudget(), RefundableBudgetLike)
    assert not isinstance(RetryBudget(), AsyncRetryBudgetLike)
    assert isinstance(CircuitBreaker(), BreakerTransitionsLike)
    assert not isinstance(CircuitBreaker(), AsyncCircuitBreakerLike | BreakerFallbacksLike)
    assert not isinstance(BudgetRegistry(), BudgetFallbacksLike)
    assert issubclass(RedisRetryBudget, BudgetFallbacksLike)
    assert issubclass(RedisPeerBudget, AsyncRetryBudgetLike)
    assert issubclass(RedisPeerBudget, RefundableBudgetLike)
    for ability in (AsyncCircuitBreakerLike, BreakerTransitionsLike, BreakerFallbacksLike):
        assert issubclass(RedisCircuitBreaker, ability)


# --- the loop gets a turn between attempts ----------------------------------------------------


class Ticker:
    """An observer task: counts its turns on the loop, noting how many ``calls`` are done."""

    def __init__(self) -> None:
        self.turns = 0
        self.done_seen: list[int] = []

    async def watch(self, calls: list[asyncio.Future[Any]]) -> None:
        """Take a turn on every pass of the loop until every call is done."""
        while not all(call.done() for call in calls):
            self.turns += 1
            self.done_seen.append(sum(call.done() for call in calls))
            await asyncio.sleep(0)


class Prompt:
    """An async peer that never awaits anything: each call answers the next status at once.

    A 200 answers OK. With a ``ticker``, each call notes the observer's turns so far.
    """

    def __init__(self, *statuses: int, ticker: Ticker | None = None) -> None:
        self.statuses = list(statuses)
        self.ticker = ticker
        self.ticks: list[int] = []

    async def __call__(self) -> object:
        """One attempt, answered without suspending."""
        self.ticks.append(self.ticker.turns if self.ticker is not None else 0)
        status = self.statuses[min(len(self.ticks), len(self.statuses)) - 1]
        return OK if status == 200 else httpx.Response(status)


async def _no_op(seconds: float) -> None:
    """An async sleep that returns at once, never suspending."""


NO_OP_SLEEPS = pytest.mark.parametrize("sleep", [lambda _: None, _no_op], ids=["sync", "async"])


@NO_OP_SLEEPS
async def test_callers_that_never_suspend_leave_the_loop_a_turn_between_their_attempts(
    sleep: Any,
) -> None:
    """200 calls to a peer that never awaits, with a no-op sleep: another task still runs.

    Each call makes three attempts (503, 503, 200); the observer gets a turn between the
    rounds of attempts, before any of the calls has finished.
    """
    guard = Guard(sleep=sleep, budget=RetryBudget(capacity=1000), random=lambda: 0.5)
    peers = [Prompt(503, 503, 200) for _ in range(200)]
    calls = [asyncio.ensure_future(guard.acall(peer)) for peer in peers]
    ticker = Ticker()
    await ticker.watch(calls)
    assert [call.result() for call in calls] == [OK] * 200
    assert all(len(peer.ticks) == 3 for peer in peers)
    assert ticker.done_seen.count(0) >= 2  # a turn before each retry round, none finished yet


@NO_OP_SLEEPS
@pytest.mark.parametrize(
    ("statuses", "refresh"),
    [((503, 503, 200), None), ((401, 200), lambda decision: True)],
    ids=["retries", "refresh"],
)
async def test_a_call_yields_to_the_loop_before_every_attempt_after_the_first(
    sleep: Any, statuses: tuple[int, ...], refresh: Any
) -> None:
    """Another task runs between any two attempts of a call, though nothing else suspends.

    The second attempt is a retry, or the resend after a credentials refresh; neither the
    peer nor the sleep ever suspends.
    """
    ticker = Ticker()
    peer = Prompt(*statuses, ticker=ticker)
    guard = Guard(sleep=sleep, random=lambda: 0.5, refresh_credentials=refresh)
    call = asyncio.ensure_future(guard.acall(peer))
    await ticker.watch([call])
    assert call.result() is OK
    assert len(peer.ticks) == len(statuses)
    assert all(a < b for a, b in itertools.pairwise(peer.ticks))


async def test_a_caller_cancelled_as_it_yields_before_a_retry_spends_no_retry_token() -> None:
    """The yield comes before the retry is sent: a caller cancelled there spends nothing."""
    budget = RetryBudget(capacity=10)
    peer = Prompt(503, 200)
    call = asyncio.ensure_future(Guard(sleep=lambda _: None, budget=budget).acall(peer))
    await asyncio.sleep(0)  # the call runs its first attempt, up to the yield before the retry
    assert (len(peer.ticks), call.done(), budget.tokens) == (1, False, 9)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (len(peer.ticks), budget.tokens) == (1, 10)

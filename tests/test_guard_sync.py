"""Guard.call: what it retries and what it hands back, on a fake clock (never a real sleep).

Mirrored by test_guard_async.py for Guard.acall.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

import httpx
import pytest

from a2a_client_errors import Action, CallFailed, Decision, Policy, Reason
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
from a2a_client_errors._guard import Guard, GuardEvent, Hook, failure_for
from a2a_client_errors._policy import GiveUp
from a2a_client_errors._retry import RetryBudget
from a2a_client_errors.testing import FakeClock, RecordingHook, error_response, set_testing
from tests.conftest import agent_unavailable, jsonrpc_error, jsonrpc_result

OK = jsonrpc_result({"id": "task-1", "status": {"state": "TASK_STATE_COMPLETED"}})
SECRET = "Bearer tok-SECRET-4f1c"
BODY_MARKER = "BODY-MARKER-8d2e"


class Peer:
    """A scripted peer: each call returns (or raises) the next outcome; the last one repeats."""

    def __init__(self, *outcomes: object, clock: FakeClock | None = None, takes: float = 0.0):
        self.outcomes = list(outcomes)
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.clock = clock
        self.takes = takes

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        """One attempt: record the arguments, take time, answer."""
        self.calls.append((args, kwargs))
        if self.clock is not None:
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

    def on_budget_exhausted(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("hook on_budget_exhausted exploded")


def _503(retry_after: float | None = None) -> httpx.Response:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return httpx.Response(503, headers=headers)


@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    """A fresh fake clock."""
    return FakeClock()


def make_guard(clock: FakeClock, **kwargs: Any) -> Guard:
    """A Guard on the fake clock, with a deterministic draw of 0.5."""
    kwargs.setdefault("random", lambda: 0.5)
    return Guard(clock=clock.now, sleep=clock.sleep, **kwargs)


# --- the happy path and the plain failures ----------------------------------------------------


def test_success_returns_the_value_after_one_attempt(clock: FakeClock) -> None:
    """A result is returned as it is, after one attempt and no sleep."""
    peer = Peer(OK)
    assert make_guard(clock).call(peer, operation="GetTask") is OK
    assert len(peer.calls) == 1
    assert clock.sleeps == []


def test_503_is_retried_until_attempts_run_out(clock: FakeClock) -> None:
    """A 503 is retried; after max_attempts RetryExhausted carries the last response."""
    last = _503()
    peer = Peer(_503(), _503(), last)
    with pytest.raises(RetryExhausted) as caught:
        make_guard(clock).call(peer, operation="GetTask")
    failure = caught.value
    assert type(failure) is RetryExhausted
    assert failure.attempts == 3
    assert failure.result is last
    assert failure.__cause__ is None
    assert failure.decision.give_up is GiveUp.ATTEMPTS
    assert clock.sleeps == [0.25, 0.5]  # draw 0.5 of ceilings 0.5 and 1


def test_503_then_success_returns_the_success(clock: FakeClock) -> None:
    """A transient 503 followed by a result returns the result."""
    peer = Peer(_503(), OK)
    assert make_guard(clock).call(peer) is OK
    assert len(peer.calls) == 2


def test_connect_error_is_retried_and_chained(clock: FakeClock) -> None:
    """A raised ConnectError is retried; the final failure's __cause__ is the last one raised."""
    errors = [httpx.ConnectError(f"refused {i}") for i in range(3)]
    peer = Peer(*errors)
    with pytest.raises(RetryExhausted) as caught:
        make_guard(clock).call(peer)
    assert caught.value.__cause__ is errors[-1]
    assert caught.value.result is None
    assert len(peer.calls) == 3


def test_jsonrpc_internal_error_on_200_is_retried(clock: FakeClock) -> None:
    """A JSON-RPC -32603 body (HTTP 200) is a retry."""
    peer = Peer(jsonrpc_error(-32603, "internal"), OK)
    assert make_guard(clock).call(peer) is OK
    assert len(peer.calls) == 2


def test_401_makes_one_attempt_without_refresh(clock: FakeClock) -> None:
    """401 is auth: one attempt, AuthFailed, no sleep."""
    peer = Peer(httpx.Response(401))
    with pytest.raises(AuthFailed) as caught:
        make_guard(clock).call(peer)
    assert caught.value.attempts == 1
    assert len(peer.calls) == 1
    assert clock.sleeps == []


def test_401_refreshes_once_then_gives_up(clock: FakeClock) -> None:
    """With refresh_credentials, a 401 refreshes once, resends once, then AuthFailed."""
    refreshed: list[Decision] = []

    def refresh(decision: Decision) -> bool:
        refreshed.append(decision)
        return True

    peer = Peer(httpx.Response(401))
    with pytest.raises(AuthFailed) as caught:
        make_guard(clock, refresh_credentials=refresh).call(peer)
    assert len(refreshed) == 1
    assert refreshed[0].action is Action.AUTH
    assert len(peer.calls) == 2
    assert caught.value.attempts == 2
    assert clock.sleeps == []


def test_401_refresh_that_helps_returns_the_result(clock: FakeClock) -> None:
    """A refresh followed by a successful resend returns the result."""
    peer = Peer(httpx.Response(401), OK)
    assert make_guard(clock, refresh_credentials=lambda d: True).call(peer) is OK
    assert len(peer.calls) == 2


def test_401_refresh_returning_false_gives_up_at_once(clock: FakeClock) -> None:
    """A refresh that returns False ends the call: one attempt, AuthFailed."""
    refreshed: list[Decision] = []

    def refresh(decision: Decision) -> bool:
        refreshed.append(decision)
        return False

    peer = Peer(httpx.Response(401), OK)
    guard = make_guard(clock, refresh_credentials=refresh)
    with pytest.raises(AuthFailed) as caught:
        guard.call(peer)
    assert len(refreshed) == 1
    assert len(peer.calls) == 1
    assert caught.value.attempts == 1


def test_async_refresh_in_call_is_a_type_error(clock: FakeClock) -> None:
    """call() cannot await an async refresh_credentials: TypeError pointing at acall()."""

    async def refresh(decision: Decision) -> bool:
        return True

    with pytest.raises(TypeError, match="acall"):
        make_guard(clock, refresh_credentials=refresh).call(Peer(httpx.Response(401)))
    gc.collect()  # the refused coroutine was closed: no "never awaited" warning


def test_raise_for_status_errors_are_classified(clock: FakeClock) -> None:
    """An HTTPStatusError raised by fn (raise_for_status) is a call error: a 503 is retried."""
    request = httpx.Request("GET", "https://agent.test/tasks/t-1")

    def fetch() -> object:
        if len(clock.sleeps) < 2:
            httpx.Response(503, request=request).raise_for_status()
        return OK

    assert make_guard(clock).call(fetch) is OK
    assert len(clock.sleeps) == 2
    with pytest.raises(ReconcileNeeded) as caught:
        make_guard(clock).call(
            lambda: httpx.Response(
                404, json={"message": "no task"}, request=request
            ).raise_for_status()
        )
    assert isinstance(caught.value.__cause__, httpx.HTTPStatusError)


def test_403_is_auth_too(clock: FakeClock) -> None:
    """403 is auth: one attempt."""
    peer = Peer(httpx.Response(403))
    with pytest.raises(AuthFailed):
        make_guard(clock).call(peer)
    assert len(peer.calls) == 1


def test_400_makes_one_attempt(clock: FakeClock) -> None:
    """400 is fix_request: one attempt, FixRequestNeeded."""
    peer = Peer(httpx.Response(400))
    with pytest.raises(FixRequestNeeded) as caught:
        make_guard(clock).call(peer)
    assert caught.value.attempts == 1
    assert len(peer.calls) == 1
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("reason", "failure"),
    [
        (Reason.TASK_NOT_FOUND, ReconcileNeeded),
        (Reason.TASK_NOT_CANCELABLE, ReconcileNeeded),
        (Reason.UNSUPPORTED_OPERATION, DegradeNeeded),
        (Reason.VERSION_NOT_SUPPORTED, FixRequestNeeded),
        (Reason.INVALID_AGENT_RESPONSE, ReportNeeded),
    ],
)
@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
def test_call_errors_end_the_call_with_their_action(
    clock: FakeClock, reason: Reason, failure: type[CallFailed], binding: str
) -> None:
    """Each non-retry reason ends the call at once with the exception of its action."""
    response = error_response(reason, binding=binding)
    peer = Peer(response)
    with pytest.raises(failure) as caught:
        make_guard(clock).call(peer, operation="GetTask")
    assert type(caught.value) is failure
    assert caught.value.reason is reason
    assert caught.value.decision.operation == "GetTask"
    assert caught.value.result is response
    assert len(peer.calls) == 1


def test_retry_after_two_sleeps_at_least_two_seconds(clock: FakeClock) -> None:
    """503 with Retry-After: 2 is retried after a sleep of at least 2 s."""
    peer = Peer(_503(2), OK)
    assert make_guard(clock).call(peer) is OK
    assert len(peer.calls) == 2
    assert len(clock.sleeps) == 1
    assert clock.sleeps[0] >= 2


@pytest.mark.parametrize("deadline", [None, 30.0, 7200.0])
def test_retry_after_past_the_limit_gives_up_without_sleeping(
    clock: FakeClock, deadline: float | None
) -> None:
    """Retry-After above max_retry_after: RetryAfterTooLong (HINT_TOO_LONG) at once.

    With no deadline at all, and with one the hint would pass or not: the cap decides first.
    """
    peer = Peer(_503(3600), OK)
    with pytest.raises(RetryAfterTooLong) as caught:
        make_guard(clock, deadline=deadline).call(peer, operation="GetTask")
    failure = caught.value
    assert not isinstance(failure, DeadlineExceeded)
    assert isinstance(failure, RetryExhausted)
    assert failure.decision.give_up is GiveUp.HINT_TOO_LONG
    assert failure.retry_after == 3600
    assert failure.attempts == 1
    assert len(peer.calls) == 1
    assert clock.sleeps == []
    assert clock.now() == 0.0


def test_a_hint_within_the_cap_past_the_deadline_is_deadline_exceeded(clock: FakeClock) -> None:
    """A 30 s hint (the cap is 60 s) under a 10 s deadline: the deadline gives up, not the cap."""
    peer = Peer(_503(30), OK)
    with pytest.raises(DeadlineExceeded) as caught:
        make_guard(clock, deadline=10.0).call(peer)
    assert caught.value.decision.give_up is GiveUp.DEADLINE
    assert not isinstance(caught.value, RetryAfterTooLong)
    assert clock.sleeps == []


def test_a_raised_max_retry_after_honours_a_long_hint(clock: FakeClock) -> None:
    """With max_retry_after=120, a 90 s hint is slept."""
    policy = Policy().with_backoff(max_retry_after=120)
    assert make_guard(clock, policy=policy).call(Peer(_503(90), OK)) is OK
    assert clock.sleeps == [90]


def test_deadline_gives_up_instead_of_sleeping_past_it(clock: FakeClock) -> None:
    """A hint that would end past the deadline raises DeadlineExceeded without sleeping."""
    peer = Peer(_503(2), OK)
    with pytest.raises(DeadlineExceeded) as caught:
        make_guard(clock, deadline=1.5).call(peer)
    assert caught.value.decision.give_up is GiveUp.DEADLINE
    assert clock.sleeps == []
    assert len(peer.calls) == 1


def test_slow_attempts_never_sleep_past_the_deadline(clock: FakeClock) -> None:
    """Attempts that take 2 s each under a 5 s deadline: the last sleep ends before it."""
    peer = Peer(_503(), clock=clock, takes=2.0)
    with pytest.raises(DeadlineExceeded):
        make_guard(clock, deadline=5.0, max_attempts=10).call(peer)
    # Attempt k starts at 2 * k + the sleeps before it; every start is before the deadline.
    starts = [2.0 * k + sum(clock.sleeps[:k]) for k in range(len(peer.calls))]
    assert all(start < 5.0 for start in starts)


# --- what is and is not a call error ----------------------------------------------------------


def test_a_bug_in_fn_propagates_unchanged(clock: FakeClock) -> None:
    """A ValueError raised by fn propagates as the same object, unwrapped, after one attempt."""
    bug = ValueError("bug in fn")
    peer = Peer(bug)
    with pytest.raises(ValueError, match="bug in fn") as caught:
        make_guard(clock).call(peer)
    assert caught.value is bug
    assert caught.value.__cause__ is None
    assert len(peer.calls) == 1


def test_a_bug_on_a_retry_propagates_unchanged(clock: FakeClock) -> None:
    """A KeyError raised on the second attempt propagates as it is, not as a CallFailed."""
    bug = KeyError("missing")
    peer = Peer(_503(), bug)
    with pytest.raises(KeyError) as caught:
        make_guard(clock).call(peer)
    assert caught.value is bug
    assert not isinstance(caught.value, CallFailed)
    assert len(peer.calls) == 2


def test_keyboard_interrupt_is_not_caught(clock: FakeClock) -> None:
    """A BaseException (KeyboardInterrupt) goes straight through."""
    with pytest.raises(KeyboardInterrupt):
        make_guard(clock).call(Peer(KeyboardInterrupt()))


def test_call_given_a_coroutine_function_names_acall(clock: FakeClock) -> None:
    """call() on a coroutine function raises TypeError pointing at acall (and leaks nothing)."""

    async def fetch() -> object:
        return OK

    with pytest.raises(TypeError, match="acall"):
        make_guard(clock).call(fetch)
    gc.collect()  # an un-awaited coroutine would warn here (warnings are errors)


def test_same_arguments_on_every_attempt(clock: FakeClock) -> None:
    """Every attempt gets the very same positional and keyword argument objects."""
    message = {"messageId": "m-1", "parts": [{"text": "hi"}]}
    options = {"timeout": 3}
    peer = Peer(agent_unavailable(), agent_unavailable(), OK)
    make_guard(clock).call(peer, message, options=options, operation="SendMessage", peer="a")
    assert len(peer.calls) == 3
    for args, kwargs in peer.calls:
        assert args[0] is message
        assert kwargs == {"options": options}
        assert kwargs["options"] is options
    assert message == {"messageId": "m-1", "parts": [{"text": "hi"}]}


def test_each_call_gets_a_fresh_retry_state(clock: FakeClock) -> None:
    """A second call on the same Guard gets its own attempts and deadline."""
    guard = make_guard(clock, deadline=10.0, budget=RetryBudget(capacity=100))
    for _ in range(3):
        peer = Peer(_503())
        with pytest.raises(RetryExhausted) as caught:
            guard.call(peer)
        assert caught.value.attempts == 3
        assert caught.value.decision.give_up is GiveUp.ATTEMPTS


def test_guard_rejects_bad_configuration() -> None:
    """max_attempts below 1 or a non-positive deadline are refused."""
    with pytest.raises(ValueError, match="max_attempts"):
        Guard(max_attempts=0)
    with pytest.raises(ValueError, match="deadline"):
        Guard(deadline=0)


def test_failure_for_maps_every_decision() -> None:
    """failure_for names the spec's class for each action and give-up."""
    assert failure_for(Decision(Action.RETRY, give_up=GiveUp.BUDGET)) is BudgetExhausted
    assert failure_for(Decision(Action.RETRY, give_up=GiveUp.DEADLINE)) is DeadlineExceeded
    assert failure_for(Decision(Action.RETRY, give_up=GiveUp.HINT_TOO_LONG)) is RetryAfterTooLong
    assert failure_for(Decision(Action.RETRY, give_up=GiveUp.ATTEMPTS)) is RetryExhausted
    assert failure_for(Decision(Action.RETRY, give_up=GiveUp.NO_MESSAGE_ID)) is RetryExhausted
    assert failure_for(Decision(Action.RECONCILE)) is ReconcileNeeded
    assert failure_for(Decision(Action.DEGRADE)) is DegradeNeeded
    assert failure_for(Decision(Action.FIX_REQUEST)) is FixRequestNeeded
    assert failure_for(Decision(Action.REPORT)) is ReportNeeded
    assert failure_for(Decision(Action.AUTH)) is AuthFailed
    assert issubclass(BudgetExhausted, RetryExhausted)
    assert issubclass(DeadlineExceeded, RetryExhausted)
    assert issubclass(RetryAfterTooLong, RetryExhausted)
    assert not issubclass(RetryAfterTooLong, DeadlineExceeded)


# --- budget -----------------------------------------------------------------------------------


def test_budget_refusal_fails_fast_and_is_observed(clock: FakeClock) -> None:
    """An empty budget: BudgetExhausted after one attempt, no sleep, on_budget_exhausted told."""
    recorder = RecordingHook()
    guard = make_guard(clock, budget=RetryBudget(capacity=0.5), hooks=[recorder])
    with pytest.raises(BudgetExhausted) as caught:
        guard.call(Peer(_503()), peer="p")
    assert caught.value.decision.give_up is GiveUp.BUDGET
    assert clock.sleeps == []
    assert recorder.names() == ["decision", "budget_exhausted", "give_up"]


# --- hooks ------------------------------------------------------------------------------------


def test_hooks_see_every_decision_in_order(clock: FakeClock) -> None:
    """A 503 then a result: decision, retry, decision; the retry event carries the delay."""
    recorder = RecordingHook()
    guard = make_guard(clock, hooks=[recorder])
    guard.call(Peer(_503(), OK), operation="GetTask", peer="peer-a")
    assert recorder.names() == ["decision", "retry", "decision"]
    retry = recorder.events[1][1]
    assert retry.decision.delay == 0.25
    assert retry.attempt == 1
    assert retry.peer == "peer-a"
    assert retry.operation == "GetTask"
    final = recorder.events[2][1]
    assert final.decision.action is Action.OK
    assert final.attempt == 2
    assert final.elapsed == pytest.approx(0.25)


def test_give_up_is_told_once_with_the_final_decision(clock: FakeClock) -> None:
    """on_give_up receives the decision the raised exception carries."""
    recorder = RecordingHook()
    with pytest.raises(ReconcileNeeded) as caught:
        make_guard(clock, hooks=[recorder]).call(Peer(jsonrpc_error(-32001, "gone")))
    give_ups = [e for name, e in recorder.events if name == "give_up"]
    assert len(give_ups) == 1
    assert give_ups[0].decision is caught.value.decision


def test_a_raising_hook_is_logged_and_swallowed(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Hooks that raise change nothing: same retries, same outcome; each failure is logged."""
    recorder = RecordingHook()
    guard = make_guard(clock, hooks=[Exploding(), recorder])
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors"):
        assert guard.call(Peer(_503(), OK)) is OK
    assert recorder.names() == ["decision", "retry", "decision"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("on_decision" in m for m in messages)
    assert any("on_retry" in m for m in messages)
    assert all(r.exc_info is not None for r in caplog.records)


def test_a_raising_give_up_hook_does_not_replace_the_failure(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The call still raises its own CallFailed when on_give_up and on_budget_exhausted raise."""
    guard = make_guard(clock, hooks=[Exploding()], budget=RetryBudget(capacity=0))
    with (
        caplog.at_level(logging.ERROR, logger="a2a_client_errors"),
        pytest.raises(BudgetExhausted),
    ):
        guard.call(Peer(_503()))
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "on_give_up" in messages
    assert "on_budget_exhausted" in messages


def test_hook_events_carry_no_request_body_or_credentials(clock: FakeClock) -> None:
    """Nothing of the request (its Authorization header, its body) appears in any event."""
    request = {
        "headers": {"Authorization": SECRET},
        "body": {"message": {"messageId": "m-1", "parts": [{"text": BODY_MARKER}]}},
    }
    recorder = RecordingHook()
    guard = make_guard(clock, hooks=[recorder])
    peer = Peer(agent_unavailable(), httpx.Response(401), OK)
    with pytest.raises(AuthFailed):
        guard.call(peer, request, token=SECRET, operation="SendMessage")
    assert len(recorder.events) >= 4
    for _, event in recorder.events:
        text = repr(event) + str(event.decision) + repr(event.decision.to_dict())
        assert SECRET not in text
        assert "tok-SECRET" not in text
        assert BODY_MARKER not in text


# --- override -----------------------------------------------------------------------------------


def test_override_turns_reconcile_into_report(clock: FakeClock) -> None:
    """override= can make TASK_NOT_FOUND's reconcile a report."""

    def override(decision: Decision) -> Action | None:
        return Action.REPORT if decision.reason is Reason.TASK_NOT_FOUND else None

    with pytest.raises(ReportNeeded) as caught:
        make_guard(clock, override=override).call(Peer(jsonrpc_error(-32001, "gone")))
    assert caught.value.decision.action is Action.REPORT
    assert caught.value.reason is Reason.TASK_NOT_FOUND


def test_override_turns_a_degrade_into_retry(clock: FakeClock) -> None:
    """override= can make UNSUPPORTED_OPERATION's degrade a retry: it is retried to the end."""
    response = error_response(Reason.UNSUPPORTED_OPERATION)
    peer = Peer(response, response, OK)

    def override(decision: Decision) -> Action | None:
        return Action.RETRY if decision.action is Action.DEGRADE else None

    assert make_guard(clock, override=override).call(peer) is OK
    assert len(peer.calls) == 3
    assert len(clock.sleeps) == 2


def test_override_turns_a_bare_501_degrade_into_retry(clock: FakeClock) -> None:
    """A reason-less degrade (HTTP 501) overridden to retry is retried too."""
    peer = Peer(httpx.Response(501), OK)

    def override(decision: Decision) -> Action | None:
        return Action.RETRY if decision.action is Action.DEGRADE else None

    assert make_guard(clock, override=override).call(peer) is OK
    assert len(peer.calls) == 2


def test_override_can_stop_a_retry(clock: FakeClock) -> None:
    """override= turning a 503's retry into report ends the call after one attempt."""
    peer = Peer(_503())
    with pytest.raises(ReportNeeded):
        make_guard(clock, override=lambda d: Action.REPORT).call(peer)
    assert len(peer.calls) == 1


def test_a_raising_override_keeps_the_decision(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """An override that raises is logged; the policy's decision stands."""

    def override(decision: Decision) -> Action | None:
        raise RuntimeError("override exploded")

    with (
        caplog.at_level(logging.ERROR, logger="a2a_client_errors"),
        pytest.raises(ReconcileNeeded),
    ):
        make_guard(clock, override=override).call(Peer(jsonrpc_error(-32001, "gone")))
    assert any("override" in r.getMessage() for r in caplog.records)


# --- testing mode -----------------------------------------------------------------------------


def test_set_testing_skips_sleeps_and_caps_attempts() -> None:
    """set_testing(True, attempts=2): no sleep, two attempts; afterwards all is as before."""
    slept: list[float] = []
    guard = Guard(sleep=slept.append, random=lambda: 0.5, max_attempts=5)
    with set_testing(True, attempts=2):
        peer = Peer(_503(30))
        with pytest.raises(RetryExhausted):
            guard.call(peer)
        assert len(peer.calls) == 2
    assert slept == []
    peer = Peer(_503(), OK)
    assert guard.call(peer) is OK
    assert slept == [0.25]


def test_observe_tells_the_hooks_of_a_decision_made_outside_an_attempt() -> None:
    """A decision an integration makes itself reaches on_decision, and on_give_up if final."""
    recorder = RecordingHook()
    guard = Guard(hooks=[recorder])
    final = Decision(Action.DEGRADE, Reason.UNSUPPORTED_OPERATION)
    guard.observe(final, peer="p", operation="SubscribeToTask")
    guard.observe(Decision(Action.RETRY, Reason.UNSUPPORTED_OPERATION), peer="p", attempt=2)
    assert recorder.names() == ["decision", "give_up", "decision"]
    first = recorder.events[0][1]
    assert (first.decision, first.peer, first.operation, first.attempt) == (
        final,
        "p",
        "SubscribeToTask",
        0,
    )
    assert first.budget_tokens == 10.0


# --- budget tokens are spent by retries that are sent ---------------------------------------


def test_a_backoff_sleep_that_is_interrupted_gives_its_retry_token_back(clock: FakeClock) -> None:
    """An interrupt during the sleep before a retry (the retry is never sent) spends nothing."""
    budget = RetryBudget(capacity=3)
    naps: list[float] = []

    def interrupted(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 2:
            raise KeyboardInterrupt

    guard = Guard(budget=budget, clock=clock.now, sleep=interrupted, max_attempts=5)
    with pytest.raises(KeyboardInterrupt):
        guard.call(Peer(_503(), _503(), OK))
    assert budget.tokens == 2  # the first retry was sent; the second one was not
    guard = make_guard(clock, budget=budget)
    assert guard.call(Peer(_503(), OK)) is OK
    assert budget.tokens == 1.5


# --- exceptions that are not call errors -------------------------------------------------------


class _UnprintableError(ValueError):
    """An exception whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_an_exception_whose_str_raises_from_the_callers_function_propagates(
    clock: FakeClock,
) -> None:
    """The caller's own bug is not a call error, even when it cannot be printed."""
    bug = _UnprintableError()
    peer = Peer(bug)
    with pytest.raises(_UnprintableError) as caught:
        make_guard(clock).call(peer, operation="GetTask")
    assert caught.value is bug
    assert len(peer.calls) == 1

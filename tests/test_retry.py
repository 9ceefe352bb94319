"""The retry engine: Backoff, retry planning, budgets, and the Guard's loop on a fake clock.

Backoff, retry planning in Policy.decide, RetryBudget and BudgetRegistry; the invariants of the
Guard's loop (hypothesis over backoffs, policies and failure sequences); and the budget under
1000 concurrent calls (threads and tasks).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import itertools
import math
import sys
import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import tenacity
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, CallFailed, Policy, Reason, normalize
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
from a2a_client_errors._retry import Backoff, BudgetRegistry, IdlePeers, RetryBudget
from a2a_client_errors.testing import FakeClock
from tests.conftest import jsonrpc_error, jsonrpc_result

TASK_1 = {"id": "task-1", "status": {"state": "TASK_STATE_COMPLETED"}}

FEW = settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])

# The failure a call ended in, by the spec (point 6): one class per action, one per give-up
# that has its own.
FAILURE_BY_ACTION: dict[Action, type[CallFailed]] = {
    Action.RETRY: RetryExhausted,
    Action.RECONCILE: ReconcileNeeded,
    Action.DEGRADE: DegradeNeeded,
    Action.FIX_REQUEST: FixRequestNeeded,
    Action.REPORT: ReportNeeded,
    Action.AUTH: AuthFailed,
}
FAILURE_BY_GIVE_UP: dict[GiveUp, type[CallFailed]] = {
    GiveUp.BUDGET: BudgetExhausted,
    GiveUp.DEADLINE: DeadlineExceeded,
    GiveUp.HINT_TOO_LONG: RetryAfterTooLong,
}


def expected_failure(action: Action, give_up: GiveUp | None) -> type[CallFailed]:
    """The exception class the spec names for a final (action, give_up)."""
    if give_up is not None and give_up in FAILURE_BY_GIVE_UP:
        return FAILURE_BY_GIVE_UP[give_up]
    return FAILURE_BY_ACTION[action]


def _503(retry_after: float | None = None) -> httpx.Response:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return httpx.Response(503, headers=headers)


# --- Backoff ----------------------------------------------------------------------------------


def test_backoff_defaults_are_the_documented_ones() -> None:
    """The default schedule is 0.5 s, x2, capped at 20 s, full jitter."""
    assert Backoff() == Backoff(initial=0.5, multiplier=2.0, cap=20.0, jitter=1.0)
    assert [Backoff().ceiling(n) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 16, 20]


@pytest.mark.parametrize(
    "kwargs",
    [{"initial": -0.1}, {"cap": -1}, {"multiplier": 0.5}, {"jitter": -0.1}, {"jitter": 1.5}],
)
def test_backoff_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    """Negative times, a shrinking multiplier or a jitter outside [0, 1] are refused."""
    with pytest.raises(ValueError, match="Backoff"):
        Backoff(**kwargs)


def test_backoff_full_jitter_spans_zero_to_the_ceiling() -> None:
    """Full jitter: draw 0 gives 0, draw 1 gives the ceiling, draw 0.5 the middle."""
    backoff = Backoff(initial=1.0, multiplier=3.0, cap=100.0)
    assert backoff.delay(2, 0.0) == 0.0
    assert backoff.delay(2, 1.0) == pytest.approx(3.0)
    assert backoff.delay(2, 0.5) == pytest.approx(1.5)


def test_backoff_without_jitter_is_the_ceiling() -> None:
    """jitter=0: every draw gives the ceiling."""
    backoff = Backoff(initial=0.2, multiplier=2.0, cap=1.0, jitter=0.0)
    assert [backoff.delay(n, 0.3) for n in (1, 2, 3, 4)] == pytest.approx([0.2, 0.4, 0.8, 1.0])


def test_backoff_huge_retry_numbers_stay_at_the_cap() -> None:
    """A retry number past float range still gives the cap, never an OverflowError."""
    backoff = Backoff(initial=1.0, multiplier=10.0, cap=7.0)
    assert backoff.ceiling(5000) == 7.0
    assert backoff.delay(5000, 1.0) == 7.0


def test_backoff_clamps_draws_outside_the_unit_interval() -> None:
    """A draw below 0 or above 1 is clamped, so the delay stays within [0, ceiling]."""
    backoff = Backoff(initial=2.0, cap=10.0)
    assert backoff.delay(1, -5.0) == 0.0
    assert backoff.delay(1, 7.0) == pytest.approx(2.0)


def _expected_ceiling(backoff: Backoff, retry: int) -> float:
    """min(cap, initial * multiplier ** (retry - 1)), computed in logs (no overflow).

    Growth stops at the last retry whose power of the multiplier is a float (the bound the
    Backoff puts on the retry number before tenacity computes the ceiling).
    """
    if backoff.initial == 0 or backoff.cap == 0:
        return 0.0
    growth = math.log(backoff.multiplier)
    if growth > 0:
        retry = min(retry, int(math.log(sys.float_info.max) / growth))
    log_raw = math.log(backoff.initial) + (retry - 1) * growth
    return backoff.cap if log_raw >= math.log(backoff.cap) else math.exp(log_raw)


def test_backoff_large_multiplier_reaches_the_cap_without_overflow() -> None:
    """A float multiplier of 3 at retry 700 (3.0 ** 699 overflows a float) gives the cap."""
    assert Backoff(initial=0.5, multiplier=3.0, cap=20.0).ceiling(700) == 20.0
    assert Backoff(initial=1.0, multiplier=10.0, cap=7.0).delay(400, 0.5) == 3.5


def test_a_tiny_initial_delay_stops_growing_where_the_power_leaves_float_range() -> None:
    """2.375 ** 821 overflows a float: past retry 820 the ceiling of a 5e-324 s start stays.

    tenacity would answer the cap once the power overflows, although 5e-324 times it is about
    1e-15 s; the Backoff bounds the retry number instead, so the ceiling stays under the cap.
    """
    backoff = Backoff(initial=5e-324, multiplier=2.375, cap=1.0)
    assert backoff.ceiling(822) == backoff.ceiling(820) == backoff.ceiling(5000)
    assert backoff.ceiling(820) == pytest.approx(_expected_ceiling(backoff, 820))
    assert 0 < backoff.ceiling(5000) < 1e-14
    assert backoff.ceiling(819) < backoff.ceiling(820)


def test_the_ceiling_is_tenacitys_wait_exponential() -> None:
    """Below the bound, every ceiling is what tenacity's wait_exponential answers."""
    backoff = Backoff(initial=0.3, multiplier=1.7, cap=45.0)
    wait = tenacity.wait_exponential(multiplier=0.3, exp_base=1.7, max=45.0)
    for retry in range(1, 40):
        state = SimpleNamespace(attempt_number=retry)
        assert backoff.ceiling(retry) == wait(state)  # type: ignore[arg-type]


backoffs = st.builds(
    Backoff,
    initial=st.floats(0, 10, allow_nan=False),
    multiplier=st.floats(1, 5, allow_nan=False),
    cap=st.floats(0, 60, allow_nan=False),
    jitter=st.floats(0, 1, allow_nan=False),
)


@FEW
@given(backoffs, st.integers(1, 2000), st.floats(0, 1, exclude_max=True))
def test_backoff_delay_is_within_jittered_ceiling(
    backoff: Backoff, retry: int, draw: float
) -> None:
    """Every delay lies in [(1 - jitter) * ceiling, ceiling], and the ceiling never passes cap."""
    ceiling = backoff.ceiling(retry)
    assert 0 <= ceiling <= backoff.cap
    assert ceiling == pytest.approx(_expected_ceiling(backoff, retry))
    delay = backoff.delay(retry, draw)
    assert (1 - backoff.jitter) * ceiling - 1e-9 <= delay <= ceiling + 1e-9


@FEW
@given(backoffs, st.integers(1, 60))
def test_backoff_ceiling_never_shrinks(backoff: Backoff, retry: int) -> None:
    """The ceiling is non-decreasing in the retry number."""
    assert backoff.ceiling(retry) <= backoff.ceiling(retry + 1)


# --- Policy.decide with a retry context ---------------------------------------------------------


def _error(x: object) -> Any:
    found = normalize(x)
    assert found is not None
    return found


def test_decide_plans_the_backoff_delay() -> None:
    """A retryable error on attempt 1 of 3 gets the backoff's delay for the first retry."""
    policy = Policy(backoff=Backoff(initial=1.0, multiplier=2.0, cap=10.0))
    decision = policy.decide(_error(_503()), attempt=2, max_attempts=3, draw=0.5)
    assert decision.action is Action.RETRY
    assert decision.delay == pytest.approx(1.0)  # ceiling 2 for the 2nd retry, half of it
    assert decision.give_up is None
    assert decision.will_retry


def test_decide_floors_the_delay_at_the_hint() -> None:
    """A Retry-After above the backoff delay becomes the delay."""
    decision = Policy().decide(_error(_503(7)), attempt=1, max_attempts=3, draw=0.1)
    assert decision.retry_after == 7
    assert decision.delay == 7


def test_decide_keeps_the_backoff_when_it_exceeds_the_hint() -> None:
    """A hint is a floor, not a replacement: a longer backoff delay stands."""
    policy = Policy(backoff=Backoff(initial=10.0, jitter=0.0))
    decision = policy.decide(_error(_503(1)), attempt=1, max_attempts=3)
    assert decision.delay == 10.0


def test_decide_gives_up_on_a_hint_past_max_retry_after() -> None:
    """A hint above max_retry_after gives up at once (HINT_TOO_LONG); at the limit it waits."""
    policy = Policy().with_backoff(max_retry_after=30)
    too_long = policy.decide(_error(_503(31)), attempt=1, max_attempts=3)
    assert too_long.give_up is GiveUp.HINT_TOO_LONG
    assert too_long.delay is None
    assert not too_long.will_retry
    at_limit = policy.decide(_error(_503(30)), attempt=1, max_attempts=3)
    assert at_limit.delay == 30


def test_decide_default_max_retry_after_is_sixty_seconds() -> None:
    """The default cap on hints is 60 s."""
    assert Policy().max_retry_after == 60
    assert Policy().decide(_error(_503(60)), attempt=1, max_attempts=3).delay == 60
    over = Policy().decide(_error(_503(61)), attempt=1, max_attempts=3)
    assert over.give_up is GiveUp.HINT_TOO_LONG


def test_decide_gives_up_when_the_delay_would_pass_the_deadline() -> None:
    """A delay that would end past the time left gives up (DEADLINE) instead of sleeping."""
    decision = Policy().decide(_error(_503(5)), attempt=1, max_attempts=3, time_left=4.0)
    assert decision.give_up is GiveUp.DEADLINE
    assert decision.delay is None
    fits = Policy().decide(_error(_503(5)), attempt=1, max_attempts=3, time_left=6.0)
    assert fits.delay == 5


def test_decide_gives_up_after_the_last_attempt() -> None:
    """At attempt == max_attempts the give-up is ATTEMPTS."""
    decision = Policy().decide(_error(_503()), attempt=3, max_attempts=3)
    assert decision.give_up is GiveUp.ATTEMPTS
    assert decision.delay is None


def test_decide_gives_up_on_an_empty_budget() -> None:
    """No budget left: BUDGET, and no delay."""
    decision = Policy().decide(_error(_503()), attempt=1, max_attempts=3, budget_left=0)
    assert decision.give_up is GiveUp.BUDGET
    assert decision.delay is None


@pytest.mark.parametrize("unsafe", [GiveUp.NOT_REPLAYABLE, GiveUp.NO_MESSAGE_ID])
def test_decide_honours_an_unsafe_resend(unsafe: GiveUp) -> None:
    """A resend the caller knows to be unsafe is never planned."""
    decision = Policy().decide(_error(_503()), attempt=1, max_attempts=3, unsafe=unsafe)
    assert decision.action is Action.RETRY
    assert decision.give_up is unsafe
    assert not decision.will_retry


def test_decide_plans_nothing_for_actions_other_than_retry() -> None:
    """A reconcile decision inside a loop carries no delay and no give-up."""
    decision = Policy().decide(_error(jsonrpc_error(-32001, "gone")), attempt=1, max_attempts=3)
    assert decision.action is Action.RECONCILE
    assert (decision.delay, decision.give_up) == (None, None)


def test_decide_is_pure() -> None:
    """The same inputs give equal decisions, and the policy does not change."""
    policy = Policy()
    error = _error(_503(2))
    first = policy.decide(error, attempt=1, max_attempts=3, time_left=9, draw=0.3)
    second = policy.decide(error, attempt=1, max_attempts=3, time_left=9, draw=0.3)
    assert first == second
    assert policy == Policy()


def test_policy_is_immutable_and_with_action_copies() -> None:
    """Policy is frozen; with_action returns a copy and leaves the original as it was."""
    policy = Policy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.max_retry_after = 5  # type: ignore[misc]
    changed = policy.with_action(Reason.INTERNAL_ERROR, Action.REPORT)
    assert changed is not policy
    assert policy.actions == {}
    with pytest.raises(TypeError):
        changed.actions["X"] = Action.OK  # type: ignore[index]


def test_per_operation_override_wins_over_per_reason() -> None:
    """An override for (operation, reason) beats one for the reason, only on that operation."""
    policy = Policy().with_action("TASK_NOT_FOUND", Action.REPORT)
    policy = policy.with_action("TASK_NOT_FOUND", Action.DEGRADE, operation="CancelTask")
    error = _error(jsonrpc_error(-32001, "gone"))
    assert policy.decide(error, operation="CancelTask").action is Action.DEGRADE
    assert policy.decide(error, operation="GetTask").action is Action.REPORT
    assert Policy().decide(error, operation="CancelTask").action is Action.RECONCILE


def test_override_to_retry_plans_a_retry() -> None:
    """A reason overridden to retry gets a delay like any retryable error."""
    policy = Policy().with_action("TASK_NOT_FOUND", Action.RETRY)
    decision = policy.decide(
        _error(jsonrpc_error(-32001, "gone")), attempt=1, max_attempts=2, draw=1.0
    )
    assert decision.will_retry
    assert decision.delay == pytest.approx(0.5)


@FEW
@given(
    backoff=backoffs,
    hint=st.none() | st.floats(0, 120, allow_nan=False),
    max_retry_after=st.floats(0, 90, allow_nan=False),
    attempt=st.integers(1, 6),
    max_attempts=st.integers(1, 6),
    time_left=st.none() | st.floats(-5, 100, allow_nan=False),
    budget_left=st.none() | st.floats(0, 3, allow_nan=False),
    draw=st.floats(0, 1, exclude_max=True),
)
def test_decide_retry_plan_invariants(
    *,
    backoff: Backoff,
    hint: float | None,
    max_retry_after: float,
    attempt: int,
    max_attempts: int,
    time_left: float | None,
    budget_left: float | None,
    draw: float,
) -> None:
    """A planned delay is in [hint, max(ceiling, hint)], ends by the deadline; give-ups are true."""
    policy = Policy(backoff=backoff, max_retry_after=max_retry_after)
    error = dataclasses.replace(_error(_503()), retry_after=hint)
    decision = policy.decide(
        error,
        attempt=attempt,
        max_attempts=max_attempts,
        time_left=time_left,
        budget_left=budget_left,
        draw=draw,
    )
    assert decision.action is Action.RETRY
    assert (decision.delay is None) != (decision.give_up is None)
    if decision.delay is not None:
        assert attempt < max_attempts
        assert hint is None or hint <= max_retry_after
        assert decision.delay >= (hint or 0.0)
        assert decision.delay <= max(backoff.ceiling(attempt), hint or 0.0) + 1e-9
        assert time_left is None or decision.delay < time_left
        assert budget_left is None or budget_left > 0
    elif decision.give_up is GiveUp.ATTEMPTS:
        assert attempt >= max_attempts
    elif decision.give_up is GiveUp.HINT_TOO_LONG:
        assert hint is not None
        assert hint > max_retry_after
    elif decision.give_up is GiveUp.DEADLINE:
        assert time_left is not None
        assert time_left <= max(backoff.ceiling(attempt), hint or 0.0) + 1e-9
    else:
        assert decision.give_up is GiveUp.BUDGET
        assert budget_left is not None
        assert budget_left <= 0


# --- RetryBudget and BudgetRegistry -----------------------------------------------------------


def test_budget_spends_until_empty_then_refuses_without_taking() -> None:
    """Each retry takes its cost; an empty bucket says no and keeps what it has."""
    budget = RetryBudget(capacity=2.5, retry_cost=1.0, success_credit=0.5)
    assert [budget.try_spend() for _ in range(4)] == [True, True, False, False]
    assert budget.tokens == pytest.approx(0.5)


def test_budget_successes_refill_up_to_capacity() -> None:
    """Credits return tokens, never more than the capacity."""
    budget = RetryBudget(capacity=3, success_credit=0.5)
    for _ in range(3):
        assert budget.try_spend()
    budget.credit()
    budget.credit()
    assert budget.tokens == pytest.approx(1.0)
    assert budget.try_spend()
    assert not budget.try_spend()
    for _ in range(100):
        budget.credit()
    assert budget.tokens == 3


def test_budget_refills_with_time_on_its_clock() -> None:
    """refill_per_second adds tokens as the (fake) clock moves, capped at capacity."""
    clock = FakeClock()
    budget = RetryBudget(capacity=4, refill_per_second=0.5, clock=clock.now)
    for _ in range(4):
        assert budget.try_spend()
    assert not budget.try_spend()
    clock.advance(2.0)
    assert budget.tokens == pytest.approx(1.0)
    assert budget.try_spend()
    clock.advance(1000)
    assert budget.tokens == 4


@pytest.mark.parametrize(
    "kwargs",
    [
        {"capacity": -1},
        {"retry_cost": 0},
        {"success_credit": -0.5},
        {"refill_per_second": -1},
    ],
)
def test_budget_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    """Negative capacity or refills, or a free retry, are refused."""
    with pytest.raises(ValueError, match="RetryBudget"):
        RetryBudget(**kwargs)


def test_budget_is_exact_under_threads() -> None:
    """16 threads racing on one bucket get exactly `capacity` retries between them."""
    budget = RetryBudget(capacity=3000, success_credit=0)
    granted = Counter[bool]()
    lock = threading.Lock()
    start = threading.Barrier(16)

    def worker() -> None:
        start.wait(timeout=10)
        mine = Counter(budget.try_spend() for _ in range(500))
        with lock:
            granted.update(mine)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert granted[True] == 3000
    assert granted[False] == 16 * 500 - 3000
    assert budget.tokens == 0


def test_budget_repr_shows_tokens_and_capacity() -> None:
    """The repr says how full the bucket is."""
    budget = RetryBudget(capacity=4)
    budget.try_spend()
    assert repr(budget) == "RetryBudget(tokens=3.00, capacity=4)"


def test_registry_gives_one_budget_per_peer() -> None:
    """The same peer gets the same budget; another peer gets its own."""
    registry = BudgetRegistry()
    a = registry.get("https://a:443")
    assert registry.get("https://a:443") is a
    assert registry.get("https://b:443") is not a
    assert isinstance(a, RetryBudget)
    assert sorted(registry.peers()) == ["https://a:443", "https://b:443"]


def test_registry_factory_is_called_once_per_peer_under_threads() -> None:
    """32 threads asking for one peer at once share a single budget from one factory call."""
    made: list[RetryBudget] = []

    def factory() -> RetryBudget:
        made.append(RetryBudget(capacity=1))
        return made[-1]

    registry = BudgetRegistry(factory)
    start = threading.Barrier(32)
    seen: list[object] = []

    def worker() -> None:
        start.wait(timeout=10)
        seen.append(registry.get("peer"))

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(made) == 1
    assert all(s is made[0] for s in seen)


def _fake_guard(**kwargs: Any) -> tuple[FakeClock, Guard]:
    clock = FakeClock()
    kwargs.setdefault("random", lambda: 0.5)
    return clock, Guard(clock=clock.now, sleep=clock.sleep, **kwargs)


def test_guard_default_budgets_are_per_peer() -> None:
    """Spending peer A's budget leaves peer B's whole (the default registry)."""
    _, guard = _fake_guard()
    for _ in range(10):  # 10 tokens, 2 retries per call
        with pytest.raises(RetryExhausted):
            guard.call(_503, peer="a")
    assert guard.budget_for("a").tokens == 0
    with pytest.raises(BudgetExhausted):
        guard.call(_503, peer="a")
    assert guard.budget_for("b").tokens == 10
    with pytest.raises(RetryExhausted) as caught:
        guard.call(_503, peer="b")
    assert type(caught.value) is RetryExhausted
    assert caught.value.attempts == 3


def test_one_budget_shared_by_two_guards_through_a_registry() -> None:
    """An injected registry shares a peer's budget between Guards."""
    registry = BudgetRegistry(lambda: RetryBudget(capacity=1, success_credit=0))
    _, first = _fake_guard(budget=registry)
    _, second = _fake_guard(budget=registry)
    with pytest.raises(RetryExhausted):
        first.call(_503, peer="p")
    with pytest.raises(BudgetExhausted) as caught:
        second.call(_503, peer="p")
    assert caught.value.attempts == 1


def test_a_single_budget_covers_every_peer() -> None:
    """A RetryBudget given as budget= is shared by all peers."""
    budget = RetryBudget(capacity=2, success_credit=0)
    _, guard = _fake_guard(budget=budget)
    with pytest.raises(RetryExhausted):
        guard.call(_503, peer="a")
    with pytest.raises(BudgetExhausted):
        guard.call(_503, peer="b")
    assert guard.budget_for("zzz") is budget


def test_success_refills_the_budget() -> None:
    """A successful call returns success_credit tokens to the peer's budget."""
    budget = RetryBudget(capacity=2, success_credit=1.0)
    _, guard = _fake_guard(budget=budget)
    with pytest.raises(RetryExhausted):
        guard.call(_503)
    assert budget.tokens == 0
    guard.call(jsonrpc_result, {})
    assert budget.tokens == 1


def test_empty_budget_fails_fast_without_sleeping() -> None:
    """With the budget empty the call raises BudgetExhausted (give_up BUDGET) and never sleeps."""
    exhausted: list[GuardEvent] = []

    class Watch(Hook):
        """Records budget refusals."""

        def on_budget_exhausted(self, event: GuardEvent) -> None:
            """Record."""
            exhausted.append(event)

    clock, guard = _fake_guard(budget=RetryBudget(capacity=0), hooks=[Watch()])
    with pytest.raises(BudgetExhausted) as caught:
        guard.call(_503, operation="GetTask")
    assert caught.value.decision.give_up is GiveUp.BUDGET
    assert caught.value.attempts == 1
    assert clock.sleeps == []
    assert clock.now() == 0
    assert [e.attempt for e in exhausted] == [1]


# --- the Guard's loop on a fake clock ---------------------------------------------------------


def test_delays_stay_within_zero_and_the_ceiling() -> None:
    """With draws in [0, 1) every sleep lies in [0, ceiling(retry)] of the default backoff."""
    draws = itertools.cycle([0.0, 0.99, 0.5, 0.25, 0.75])
    clock, guard = _fake_guard(max_attempts=6, random=lambda: next(draws))
    with pytest.raises(RetryExhausted):
        guard.call(_503)
    backoff = Backoff()
    # A zero delay is not slept at all; the others follow the retry number.
    assert len(clock.sleeps) <= 5
    for sleep in clock.sleeps:
        assert 0 < sleep <= backoff.cap
    assert max(clock.sleeps) <= backoff.ceiling(5)


def test_hint_floors_every_sleep() -> None:
    """Each sleep after a Retry-After: 3 lasts at least 3 s."""
    clock, guard = _fake_guard(max_attempts=4, random=lambda: 0.0)
    with pytest.raises(RetryExhausted):
        guard.call(_503, 3)
    assert clock.sleeps == [3, 3, 3]


def test_the_deadline_is_never_passed() -> None:
    """Start + every sleep never goes beyond the deadline; the call gives up instead."""
    clock, guard = _fake_guard(max_attempts=50, deadline=10.0, random=lambda: 0.999)
    with pytest.raises(DeadlineExceeded) as caught:
        guard.call(_503)
    assert caught.value.decision.give_up is GiveUp.DEADLINE
    assert sum(clock.sleeps) <= 10.0
    assert clock.now() <= 10.0
    assert caught.value.attempts == len(clock.sleeps) + 1


def test_deadline_counts_the_time_attempts_take() -> None:
    """Slow attempts eat the deadline too: no sleep starts that would end past it."""
    clock, guard = _fake_guard(max_attempts=10, deadline=5.0, random=lambda: 0.999)

    def slow() -> httpx.Response:
        clock.advance(1.5)
        return _503()

    with pytest.raises(DeadlineExceeded):
        guard.call(slow)
    assert clock.now() - 1.5 + (clock.sleeps[-1] if clock.sleeps else 0) <= 5.0 + 1.5
    # The last sleep ended before the deadline: the attempt after it started in time.
    starts = [1.5 * k + sum(clock.sleeps[:k]) for k in range(len(clock.sleeps) + 1)]
    assert all(s < 5.0 for s in starts)


def test_per_call_deadline_overrides_the_guards() -> None:
    """call(..., deadline=) replaces the Guard's deadline for that call."""
    clock, guard = _fake_guard(deadline=100.0)
    with pytest.raises(DeadlineExceeded):
        guard.call(_503, 5, deadline=4.0)
    assert clock.sleeps == []
    assert guard.call(lambda: jsonrpc_result({}), deadline=1.0) == jsonrpc_result({})


def test_attempts_are_capped() -> None:
    """max_attempts=4 makes exactly 4 attempts at a peer that always fails."""
    clock, guard = _fake_guard(max_attempts=4)
    calls: list[int] = []

    def fn() -> httpx.Response:
        calls.append(1)
        return _503()

    with pytest.raises(RetryExhausted) as caught:
        guard.call(fn)
    assert len(calls) == 4
    assert caught.value.attempts == 4
    assert caught.value.decision.give_up is GiveUp.ATTEMPTS
    assert len(clock.sleeps) == 3


# --- hypothesis: failure sequences through the Guard ------------------------------------------

KINDS = ("ok", "503", "503+hint", "connect", "rpc-32603", "task-not-found", "401")


@dataclass(frozen=True)
class Step:
    """One attempt's outcome, and how long the attempt takes on the fake clock."""

    kind: str
    hint: int = 0
    takes: float = 0.0

    def produce(self) -> object:
        """Return or raise what the peer answers."""
        if self.kind == "ok":
            return jsonrpc_result(TASK_1)
        if self.kind == "503":
            return _503()
        if self.kind == "503+hint":
            return _503(self.hint)
        if self.kind == "connect":
            raise httpx.ConnectError("connection refused")
        if self.kind == "rpc-32603":
            return jsonrpc_error(-32603, "internal error")
        if self.kind == "task-not-found":
            return jsonrpc_error(-32001, "Task not found")
        return httpx.Response(401)


DEFAULT_ACTIONS = {
    "ok": Action.OK,
    "503": Action.RETRY,
    "503+hint": Action.RETRY,
    "connect": Action.RETRY,
    "rpc-32603": Action.RETRY,
    "task-not-found": Action.RECONCILE,
    "401": Action.AUTH,
}
REASON_OF = {"rpc-32603": "INTERNAL_ERROR", "task-not-found": "TASK_NOT_FOUND"}

steps = st.builds(
    Step,
    kind=st.sampled_from(KINDS),
    hint=st.integers(0, 90),
    takes=st.sampled_from([0.0, 0.0, 0.1, 1.5, 6.0]),
)
overridable = st.sampled_from(
    [Action.RETRY, Action.RECONCILE, Action.REPORT, Action.DEGRADE, Action.FIX_REQUEST]
)


@dataclass
class Scenario:
    """One hypothesis example: a Guard's configuration and the calls it makes."""

    backoff: Backoff
    max_retry_after: float
    overrides: dict[str, Action]
    max_attempts: int
    deadline: float | None
    capacity: int
    credit: float
    draws: list[float]
    calls: list[list[Step]]

    def action_of(self, step: Step) -> Action:
        """The action the policy takes for ``step`` (the default, or its override)."""
        reason = REASON_OF.get(step.kind)
        if reason is not None and reason in self.overrides:
            return self.overrides[reason]
        return DEFAULT_ACTIONS[step.kind]


@dataclass
class Run:
    """What one guarded call did, seen from the peer and the clock."""

    script: list[Step]
    clock: FakeClock
    start: float = 0.0
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    produced: list[Step] = field(default_factory=list)
    outcome: object = None
    ran_out: bool = False

    def __call__(self, marker: object, *, key: str) -> object:
        """One attempt: check the arguments are the same, take time, answer."""
        assert marker is SENTINEL
        assert key == "same"
        if len(self.produced) == len(self.script):
            self.ran_out = True
            raise _RanOut
        step = self.script[len(self.produced)]
        self.starts.append(self.clock.now())
        self.produced.append(step)
        self.clock.advance(step.takes)
        self.ends.append(self.clock.now())
        return step.produce()


SENTINEL = object()


class _RanOut(BaseException):
    """The script ran out: the Guard wanted one more attempt than the example scripted."""


scenarios = st.builds(
    Scenario,
    backoff=backoffs,
    max_retry_after=st.floats(1, 60, allow_nan=False),
    overrides=st.dictionaries(st.sampled_from(sorted(REASON_OF.values())), overridable),
    max_attempts=st.integers(1, 5),
    deadline=st.none() | st.floats(0.5, 20, allow_nan=False),
    capacity=st.sampled_from([0, 2, 1000, 1000]),
    credit=st.sampled_from([0.0, 0.5]),
    draws=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=8),
    calls=st.lists(st.lists(steps, min_size=1, max_size=6), min_size=1, max_size=3),
)


@SOME
@given(scenarios)
def test_guard_loop_invariants(scenario: Scenario) -> None:
    """Any backoff, policy and failure sequence: the loop's invariants hold (see _check_run)."""
    clock = FakeClock()
    decisions: list[Any] = []

    class Last(Hook):
        """Records every decision."""

        def on_decision(self, event: GuardEvent) -> None:
            """Record."""
            decisions.append(event.decision)

    draw = itertools.cycle(scenario.draws)
    policy = Policy(backoff=scenario.backoff, max_retry_after=scenario.max_retry_after)
    guard = Guard(
        policy=policy.with_actions(scenario.overrides),
        budget=RetryBudget(capacity=scenario.capacity, success_credit=scenario.credit),
        max_attempts=scenario.max_attempts,
        deadline=scenario.deadline,
        hooks=[Last()],
        clock=clock.now,
        sleep=clock.sleep,
        random=lambda: next(draw),
    )
    retries = 0
    credited = 0
    for script in scenario.calls:
        run = Run(script, clock, start=clock.now())
        try:
            run.outcome = guard.call(run, SENTINEL, key="same", operation="GetTask", peer="p")
        except CallFailed as failure:
            run.outcome = failure
        except _RanOut:
            pass
        _check_run(scenario, run, decisions)
        retries += max(0, len(run.produced) - 1)
        last = run.produced[-1]
        if not run.ran_out and scenario.action_of(last) is not Action.RETRY:
            credited += 1
    # The shared budget: never more retries than its capacity plus what credits gave back.
    assert retries <= scenario.capacity + scenario.credit * credited + 1e-9


def _check_run(scenario: Scenario, run: Run, decisions: list[Any]) -> None:
    """Check one call against the spec.

    attempts <= max_attempts; retries only after retry decisions; each sleep within [hint,
    max(ceiling, hint)] and ending by the deadline; no sleep after the last attempt; the
    exception matches the final decision; a success returns its value.
    """
    n = len(run.produced)
    assert n <= scenario.max_attempts
    assert all(scenario.action_of(s) is Action.RETRY for s in run.produced[:-1])
    deadline_at = None if scenario.deadline is None else run.start + scenario.deadline
    for k in range(1, n):
        gap = run.starts[k] - run.ends[k - 1]  # the sleep before retry k
        before = run.produced[k - 1]
        hint = before.hint if before.kind == "503+hint" else 0.0
        assert gap >= hint - 1e-9
        assert gap <= max(scenario.backoff.ceiling(k), hint) + 1e-9
        assert gap <= max(scenario.backoff.cap, hint) + 1e-9
        if deadline_at is not None:
            assert run.starts[k] <= deadline_at + 1e-9
    last = run.produced[-1]
    if run.ran_out:
        assert scenario.action_of(last) is Action.RETRY
        return
    assert run.clock.now() == pytest.approx(run.ends[-1])  # no sleep after the last attempt
    assert decisions[-1].attempt == n
    outcome = run.outcome
    if not isinstance(outcome, CallFailed):
        assert scenario.action_of(last) is Action.OK
        assert outcome == jsonrpc_result(TASK_1)
        return
    decision = outcome.decision
    assert decision is decisions[-1]
    assert decision.action is scenario.action_of(last)
    assert type(outcome) is expected_failure(decision.action, decision.give_up)
    assert outcome.attempts == n
    if last.kind == "connect":
        assert isinstance(outcome.__cause__, httpx.ConnectError)
    else:
        assert outcome.result is not None
    _check_give_up(scenario, decision, n, last, deadline_at)


def _check_give_up(
    scenario: Scenario, decision: Any, n: int, last: Step, deadline_at: float | None
) -> None:
    """A retry that stopped says why, and the why is true; other actions never give up."""
    event(f"final: {decision.action.value} / {decision.give_up}")
    if decision.action is not Action.RETRY:
        assert decision.give_up is None
        return
    assert decision.give_up is not None
    if decision.give_up is GiveUp.ATTEMPTS:
        assert n == scenario.max_attempts
    elif decision.give_up is GiveUp.HINT_TOO_LONG:
        assert last.kind == "503+hint"
        assert last.hint > scenario.max_retry_after
    elif decision.give_up is GiveUp.DEADLINE:
        assert deadline_at is not None
    else:
        assert decision.give_up is GiveUp.BUDGET


# --- the budget under 1000 concurrent calls ---------------------------------------------------

CALLS = 1000
CAPACITY = 25


def test_budget_caps_attempts_of_1000_threaded_calls() -> None:
    """1000 threaded calls at an always-503 peer: calls + capacity attempts, no refused sleep."""
    budget = RetryBudget(capacity=CAPACITY)
    local = threading.local()
    lock = threading.Lock()
    attempts: Counter[int] = Counter()
    sleeps: defaultdict[int, list[float]] = defaultdict(list)
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        with lock:
            sleeps[local.call].append(seconds)

    guard = Guard(budget=budget, sleep=sleep, clock=clock.now, random=lambda: 0.5)

    def fn(i: int) -> httpx.Response:
        with lock:
            attempts[i] += 1
        return _503()

    def one(i: int) -> CallFailed | None:
        local.call = i
        try:
            guard.call(fn, i, operation="GetTask", peer="peer")
        except CallFailed as failure:
            return failure
        return None

    with ThreadPoolExecutor(max_workers=32) as pool:
        failures = list(pool.map(one, range(CALLS)))
    _check_concurrent_outcome(failures, attempts, sleeps, budget)


async def test_budget_caps_attempts_of_1000_concurrent_tasks() -> None:
    """1000 acall tasks at an always-503 peer: calls + capacity attempts, no refused sleep."""
    budget = RetryBudget(capacity=CAPACITY)
    current: contextvars.ContextVar[int] = contextvars.ContextVar("current")
    attempts: Counter[int] = Counter()
    sleeps: defaultdict[int, list[float]] = defaultdict(list)
    clock = FakeClock()

    async def sleep(seconds: float) -> None:
        sleeps[current.get()].append(seconds)
        await asyncio.sleep(0)

    guard = Guard(budget=budget, sleep=sleep, clock=clock.now, random=lambda: 0.5)

    async def fn(i: int) -> httpx.Response:
        attempts[i] += 1
        await asyncio.sleep(0)
        return _503()

    async def one(i: int) -> CallFailed | None:
        current.set(i)
        try:
            await guard.acall(fn, i, operation="GetTask", peer="peer")
        except CallFailed as failure:
            return failure
        return None

    failures = await asyncio.gather(*(one(i) for i in range(CALLS)))
    _check_concurrent_outcome(list(failures), attempts, sleeps, budget)


def _check_concurrent_outcome(
    failures: list[CallFailed | None],
    attempts: Counter[int],
    sleeps: dict[int, list[float]],
    budget: RetryBudget,
) -> None:
    assert all(isinstance(f, RetryExhausted) for f in failures)
    assert sum(attempts.values()) <= CALLS + CAPACITY
    # Every call wanted a retry and no success refilled: the budget paid exactly CAPACITY.
    assert sum(attempts.values()) == CALLS + CAPACITY
    assert budget.tokens < budget.retry_cost
    for i, failure in enumerate(failures):
        assert failure is not None
        # One sleep per retry made; none for the refused one.
        assert len(sleeps.get(i, [])) == attempts[i] - 1
        assert failure.attempts == attempts[i]
        if failure.decision.give_up is GiveUp.BUDGET:
            assert type(failure) is BudgetExhausted
    refused = sum(1 for f in failures if f is not None and type(f) is BudgetExhausted)
    assert refused >= CALLS - CAPACITY
    assert math.isclose(sum(len(s) for s in sleeps.values()), CAPACITY)


# --- budgets of peers unused for a while are forgotten --------------------------------------


def test_budgets_of_peers_unused_for_a_while_are_forgotten() -> None:
    """Calls to thousands of random hosts leave only the budgets of the hosts used lately."""
    clock = FakeClock()
    registry = BudgetRegistry(idle=600, clock=clock.now)
    guard = Guard(budget=registry, clock=clock.now, sleep=clock.sleep)
    for host in range(5000):
        guard.call(lambda: jsonrpc_result(TASK_1), peer=f"https://host-{host}.example")
        clock.advance(0.1)  # 500 s for all of them
    assert len(registry.peers()) == 5000
    clock.advance(400)  # the first ones have been idle for 900 s, the last ones for 400 s
    guard.call(lambda: jsonrpc_result(TASK_1), peer="https://now.example")
    kept = registry.peers()
    assert "https://now.example" in kept
    assert "https://host-0.example" not in kept
    assert "https://host-4999.example" in kept
    assert len(kept) < 3000


def test_a_peer_in_use_keeps_its_budget_and_a_forgotten_one_starts_full() -> None:
    """Used within ``idle``: the same budget; idle longer: a fresh, full one."""
    clock = FakeClock()
    registry = BudgetRegistry(idle=60, clock=clock.now)
    budget = registry.get("a")
    assert budget.try_spend()
    for _ in range(10):
        clock.advance(59)
        assert registry.get("a") is budget
    clock.advance(61)
    registry.get("b")  # a lookup runs the sweep
    fresh = registry.get("a")
    assert fresh is not budget
    assert fresh.tokens == 10


def test_idle_peers_hands_what_it_forgets_over_and_logs_what_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``forget`` sees each forgotten object; one that raises is logged, the lookup goes on."""
    clock = FakeClock()
    forgotten: list[str] = []

    def forget(item: str) -> None:
        forgotten.append(item)
        raise RuntimeError("cannot forget")

    peers: IdlePeers[str] = IdlePeers(str.upper, idle=10, clock=clock.now, forget=forget)
    assert peers.get("a") == "A"
    assert peers.get("b") == "B"
    assert len(peers) == 2
    clock.advance(11)
    assert peers.get("c") == "C"
    assert sorted(forgotten) == ["A", "B"]
    assert peers.values() == ["C"]
    assert "cannot forget" in caplog.text


def test_idle_peers_peek_makes_nothing_and_is_not_a_use() -> None:
    """``peek`` reads what is held: an unknown peer stays unknown, an idle one is forgotten."""
    clock = FakeClock()
    peers: IdlePeers[str] = IdlePeers(str.upper, idle=10, clock=clock.now)
    assert peers.peek("a") is None
    assert peers.peers() == []
    assert peers.get("a") == "A"
    for _ in range(4):
        clock.advance(3)
        assert peers.peek("a") == "A"
    assert peers.get("b") == "B"  # 12 s after its last use: "a" is swept
    assert peers.peek("a") is None
    assert peers.peers() == ["b"]


def test_idle_must_be_positive_and_inf_never_forgets() -> None:
    """``idle`` is checked; ``math.inf`` keeps every peer."""
    for idle in (0, -1, math.nan):
        with pytest.raises(ValueError, match="idle"):
            BudgetRegistry(idle=idle)
    clock = FakeClock()
    registry = BudgetRegistry(idle=math.inf, clock=clock.now)
    registry.get("a")
    clock.advance(1e9)
    registry.get("b")
    assert registry.peers() == ["a", "b"]


def test_refund_gives_back_one_retry_up_to_capacity() -> None:
    """A retry paid for and never sent gives its cost back; never past capacity."""
    budget = RetryBudget(capacity=2, retry_cost=1)
    assert budget.try_spend()
    budget.refund()
    assert budget.tokens == 2
    budget.refund()
    assert budget.tokens == 2

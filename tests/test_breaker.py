"""The circuit breaker: what counts, every transition on a fake clock, and the Guard under it."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors import (
    CallFailed,
    CircuitBreaker,
    Guard,
    GuardTransport,
    PeerUnavailable,
    Reason,
    normalize,
)
from a2a_client_errors._breaker import verdict_of
from a2a_client_errors._failures import RetryExhausted
from a2a_client_errors._policy import GiveUp
from a2a_client_errors.integrations.grpc import NotConnectedError
from a2a_client_errors.testing import FakeClock, RecordingHook, error_response
from a2a_client_errors.types import (
    Admission,
    BreakerState,
    CircuitBreakerLike,
    Verdict,
    peer_unwell,
)
from tests.conftest import agent_unavailable, jsonrpc_error, jsonrpc_result

OK = jsonrpc_result({"id": "task-1", "status": {"state": "TASK_STATE_COMPLETED"}})
FAILED_TASK = jsonrpc_result({"id": "task-1", "status": {"state": "TASK_STATE_FAILED"}})
REQUEST = httpx.Request("POST", "https://agent.example/")


def _refused() -> Exception:
    return httpx.ConnectError("refused", request=REQUEST)


class _Rpc(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "x"

    def trailing_metadata(self) -> tuple[()]:
        return ()


def _breaker(clock: FakeClock, **kwargs: Any) -> CircuitBreaker:
    settings_: dict[str, Any] = {"min_calls": 4, "clock": clock, "random": lambda: 0.0}
    return CircuitBreaker(**{**settings_, **kwargs})


def _open(breaker: CircuitBreaker, peer: str = "p") -> None:
    for _ in range(breaker.min_calls):
        breaker.record(peer, Verdict.UNWELL)


# --- what counts ----------------------------------------------------------------------------

UNWELL = [
    _refused(),
    httpx.ReadTimeout("slow", request=REQUEST),
    httpx.RemoteProtocolError("closed", request=REQUEST),
    httpx.Response(503, request=REQUEST),
    httpx.Response(503, headers={"Retry-After": "1"}, request=REQUEST),
    agent_unavailable(),
    httpx.Response(429, request=REQUEST),
    httpx.Response(500, request=REQUEST),
    httpx.Response(502, request=REQUEST),
    _Rpc(grpc.StatusCode.UNAVAILABLE),
    NotConnectedError(grpc.StatusCode.UNAVAILABLE, "nothing sent"),
    _Rpc(grpc.StatusCode.DEADLINE_EXCEEDED),
    _Rpc(grpc.StatusCode.RESOURCE_EXHAUSTED),
    _Rpc(grpc.StatusCode.INTERNAL),
]
HEALTHY = [
    jsonrpc_error(-32001, "Task not found"),
    jsonrpc_error(-32602, "Invalid params"),
    jsonrpc_error(-32009, "Version not supported"),
    error_response(Reason.EXTENSION_SUPPORT_REQUIRED),
    error_response(Reason.TASK_NOT_FOUND, binding="http+json"),
    httpx.Response(401, request=REQUEST),
    httpx.Response(403, request=REQUEST),
    httpx.Response(404, request=REQUEST),
    httpx.Response(501, request=REQUEST),
    _Rpc(grpc.StatusCode.NOT_FOUND),
    _Rpc(grpc.StatusCode.UNAUTHENTICATED),
    _Rpc(grpc.StatusCode.INVALID_ARGUMENT),
]


@pytest.mark.parametrize("outcome", UNWELL, ids=repr)
def test_transport_failures_overload_and_5xx_count(outcome: object) -> None:
    """Connect, timeout, broken connection, 429, 5xx, UNAVAILABLE & co. say the peer is unwell."""
    error = normalize(outcome, operation="GetTask")
    assert error is not None
    assert peer_unwell(error)
    assert verdict_of(error) is Verdict.UNWELL


@pytest.mark.parametrize("outcome", HEALTHY, ids=repr)
def test_call_errors_auth_and_wrong_urls_never_count(outcome: object) -> None:
    """A2A call errors, auth, a web server's 404 and 501 are answers of a peer that is up."""
    error = normalize(outcome, operation="GetTask")
    assert error is not None
    assert not peer_unwell(error)
    assert verdict_of(error) is Verdict.HEALTHY


def test_a_result_is_healthy() -> None:
    """No error (a result, whatever task it holds) is a healthy verdict."""
    assert verdict_of(None) is Verdict.HEALTHY
    assert normalize(FAILED_TASK) is None


# --- transitions ----------------------------------------------------------------------------


def test_it_opens_at_the_ratio_once_min_calls_are_in_the_window() -> None:
    """Below min_calls nothing opens; at min_calls with the ratio reached, it opens."""
    clock = FakeClock()
    breaker = _breaker(clock)
    for _ in range(3):
        breaker.record("p", Verdict.UNWELL)
    assert breaker.state("p") is BreakerState.CLOSED
    breaker.record("p", Verdict.UNWELL)
    assert breaker.state("p") is BreakerState.OPEN
    assert breaker.admit("p") == Admission(False, False, BreakerState.OPEN, 5.0)
    assert breaker.retry_in("p") == 5.0


def test_successes_keep_the_ratio_below_the_threshold() -> None:
    """Failures that are less than half of the window's outcomes never open it."""
    breaker = _breaker(FakeClock())
    for _ in range(50):
        breaker.record("p", Verdict.HEALTHY)
        breaker.record("p", Verdict.HEALTHY)
        breaker.record("p", Verdict.UNWELL)
    assert breaker.state("p") is BreakerState.CLOSED


def test_old_outcomes_leave_the_window() -> None:
    """Failures older than the window are forgotten: they cannot add up with new ones."""
    clock = FakeClock()
    breaker = _breaker(clock, window=10.0)
    for _ in range(3):
        breaker.record("p", Verdict.UNWELL)
    clock.advance(11.0)
    breaker.record("p", Verdict.UNWELL)
    assert breaker.state("p") is BreakerState.CLOSED


def test_after_the_cooldown_one_probe_goes_and_its_success_closes() -> None:
    """Open, then half-open after the cool-down: one probe at a time; its success closes it."""
    clock = FakeClock()
    breaker = _breaker(clock)
    changes: list[Any] = []
    breaker.subscribe(changes.append)
    _open(breaker)
    clock.advance(4.9)
    assert not breaker.admit("p").allowed
    clock.advance(0.1)
    assert breaker.state("p") is BreakerState.HALF_OPEN
    probe = breaker.admit("p")
    assert probe.allowed
    assert probe.probe
    assert breaker.admit("p") == Admission(False, False, BreakerState.HALF_OPEN, 0.0)
    breaker.record("p", Verdict.HEALTHY, probe=True)
    assert breaker.state("p") is BreakerState.CLOSED
    assert breaker.admit("p").allowed
    assert [(c.old.value, c.new.value, c.cause) for c in changes] == [
        ("closed", "open", "failure_ratio"),
        ("open", "half_open", "cooldown_elapsed"),
        ("half_open", "closed", "probe_succeeded"),
    ]
    assert changes[0].failure_ratio == 1.0
    assert changes[0].calls == 4


def test_a_failed_probe_doubles_the_cooldown_up_to_its_cap() -> None:
    """Each failed probe opens it again for twice as long, never beyond max_cooldown."""
    clock = FakeClock()
    breaker = _breaker(clock, cooldown=5.0, max_cooldown=30.0)
    _open(breaker)
    seen = []
    for _ in range(5):
        clock.advance(breaker.retry_in("p"))
        assert breaker.admit("p").probe
        breaker.record("p", Verdict.UNWELL, probe=True)
        seen.append(breaker.retry_in("p"))
    assert seen == [10.0, 20.0, 30.0, 30.0, 30.0]
    clock.advance(30.0)
    assert breaker.admit("p").probe
    breaker.record("p", Verdict.HEALTHY, probe=True)
    _open(breaker)
    assert breaker.retry_in("p") == 5.0  # a closed breaker starts again from the first cool-down


def test_the_cooldown_is_at_least_the_servers_retry_after() -> None:
    """A 503 asking for 40 s keeps the breaker open 40 s, not 5 (capped at max_cooldown)."""
    breaker = _breaker(FakeClock())
    for _ in range(4):
        breaker.record("p", Verdict.UNWELL, retry_after=40.0)
    assert breaker.retry_in("p") == 40.0
    assert breaker.cooldown_for(0, 1e9, 0.0) == breaker.max_cooldown


def test_the_jitter_only_shortens_the_cooldown() -> None:
    """A draw takes off at most ``jitter`` of the cool-down; it never adds to it."""
    breaker = CircuitBreaker(jitter=0.2)
    assert breaker.cooldown_for(0, None, 0.0) == 5.0
    assert breaker.cooldown_for(0, None, 0.999) == pytest.approx(4.0, abs=0.01)
    assert breaker.cooldown_for(10_000, None, 0.0) == 120.0


def test_an_abandoned_probe_frees_its_slot() -> None:
    """A probe that ends without a verdict lets the next call probe; the breaker stays half-open."""
    clock = FakeClock()
    breaker = _breaker(clock)
    _open(breaker)
    clock.advance(5.0)
    assert breaker.admit("p").probe
    breaker.record("p", Verdict.ABANDONED, probe=True)
    assert breaker.state("p") is BreakerState.HALF_OPEN
    assert breaker.admit("p").probe


def test_late_outcomes_change_nothing_while_open() -> None:
    """Answers of calls sent before it opened neither close nor extend an open breaker."""
    clock = FakeClock()
    breaker = _breaker(clock)
    _open(breaker)
    breaker.record("p", Verdict.HEALTHY)
    breaker.record("p", Verdict.UNWELL)
    assert breaker.state("p") is BreakerState.OPEN
    assert breaker.retry_in("p") == 5.0


def test_peers_are_apart_and_reset_closes() -> None:
    """One peer's failures never open another's breaker; reset closes and forgets."""
    breaker = _breaker(FakeClock())
    _open(breaker, "a")
    assert breaker.state("b") is BreakerState.CLOSED
    assert breaker.admit("b").allowed
    assert sorted(breaker.peers()) == ["a"]
    breaker.reset("a")
    breaker.reset("never-seen")
    assert breaker.state("a") is BreakerState.CLOSED


def test_bad_settings_are_refused() -> None:
    """Ratios outside (0, 1], a cool-down above its cap, and other nonsense are ValueErrors."""
    for bad in (
        {"failure_ratio": 0.0},
        {"failure_ratio": 1.5},
        {"min_calls": 0},
        {"window": 0.0},
        {"cooldown": 10.0, "max_cooldown": 5.0},
        {"jitter": 1.0},
        {"idle": 60.0},  # below max_cooldown (120 s): it could forget a breaker that refuses
        {"idle": 60.0, "max_cooldown": 60.0, "window": 90.0},  # below the window
        {"idle": 0.0, "max_cooldown": 0.0, "cooldown": 0.0},
        {"idle": math.nan},
    ):
        with pytest.raises(ValueError, match="CircuitBreaker needs"):
            CircuitBreaker(**bad)


def test_it_is_a_circuit_breaker_like() -> None:
    """The Guard's protocol is met by the local breaker."""
    assert isinstance(CircuitBreaker(), CircuitBreakerLike)


def test_opening_logs_a_warning_and_closing_an_info(caplog: pytest.LogCaptureFixture) -> None:
    """WARNING when a breaker opens, INFO when it closes; a failing listener is logged."""
    clock = FakeClock()
    breaker = _breaker(clock)

    def broken(_: object) -> None:
        raise RuntimeError

    breaker.subscribe(broken)
    with caplog.at_level(logging.INFO, "a2a_client_errors"):
        _open(breaker)
        clock.advance(5.0)
        breaker.admit("p")
        breaker.record("p", Verdict.HEALTHY, probe=True)
    levels = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if "circuit breaker of" in r.getMessage()
    ]
    assert levels[0][0] == logging.WARNING
    assert "opened" in levels[0][1]
    assert levels[-1][0] == logging.INFO
    assert any("listener failed" in r.getMessage() for r in caplog.records)


def test_a_bound_listener_is_held_weakly() -> None:
    """A Guard that goes away is no longer told (its hooks are not kept alive)."""
    breaker = _breaker(FakeClock())
    hook = RecordingHook()
    guard = Guard(breaker=breaker, hooks=[hook])
    del guard
    import gc

    gc.collect()
    _open(breaker)
    assert hook.breakers == []


# --- properties -----------------------------------------------------------------------------

HEALTHY_ERRORS = [normalize(outcome, operation="GetTask") for outcome in HEALTHY]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(HEALTHY))), st.floats(0, 5)), max_size=200))
def test_protocol_errors_and_task_outcomes_alone_never_open(steps: list[tuple[int, float]]) -> None:
    """Whatever sequence of call errors and results: the breaker stays closed."""
    clock = FakeClock()
    breaker = CircuitBreaker(min_calls=1, failure_ratio=0.01, clock=clock)
    for index, wait in steps:
        clock.advance(wait)
        error = HEALTHY_ERRORS[index] if index % 3 else None  # a result now and then
        assert breaker.admit("p").allowed
        breaker.record("p", verdict_of(error))
    assert breaker.state("p") is BreakerState.CLOSED


_ACTIONS = st.sampled_from(["admit", "healthy", "unwell", "abandon", "tick"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ACTIONS, max_size=300))
def test_never_more_than_one_probe_in_flight(actions: list[str]) -> None:
    """Across any interleaving of admissions and verdicts, at most one probe is out at a time."""
    clock = FakeClock()
    breaker = _breaker(clock, min_calls=2, cooldown=1.0, max_cooldown=4.0)
    probes = 0
    plain = 0
    for action in actions:
        if action == "admit":
            admission = breaker.admit("p")
            if admission.probe:
                probes += 1
            elif admission.allowed:
                plain += 1
            assert probes <= 1
        elif action == "tick":
            clock.advance(1.0)
        else:
            verdict = {"healthy": Verdict.HEALTHY, "unwell": Verdict.UNWELL}.get(
                action, Verdict.ABANDONED
            )
            if probes:
                probes -= 1
                breaker.record("p", verdict, probe=True)
            elif plain:
                plain -= 1
                breaker.record("p", verdict)


def test_one_probe_among_many_threads() -> None:
    """Two hundred threads asking at once after the cool-down: exactly one probe is let through."""
    clock = FakeClock()
    breaker = _breaker(clock)
    _open(breaker)
    clock.advance(5.0)
    barrier = threading.Barrier(20)

    def ask(_: int) -> bool:
        barrier.wait()
        return breaker.admit("p").allowed

    with ThreadPoolExecutor(20) as pool:
        allowed = list(pool.map(ask, range(20)))
    assert allowed.count(True) == 1


# --- the Guard under a breaker --------------------------------------------------------------


class Peer:
    """A scripted peer: counts what is sent, answers the current outcome."""

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome
        self.sent = 0

    def __call__(self) -> object:
        """One attempt."""
        self.sent += 1
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def _guard(clock: FakeClock, breaker: CircuitBreaker, **kwargs: Any) -> Guard:
    return Guard(breaker=breaker, clock=clock, sleep=clock.sleep, random=lambda: 0.0, **kwargs)


def test_an_open_breaker_fails_fast_without_sending_or_sleeping() -> None:
    """Once open, calls raise PeerUnavailable at once: nothing sent, no sleep, told to hooks."""
    clock = FakeClock()
    hook = RecordingHook()
    guard = _guard(clock, _breaker(clock), hooks=[hook], max_attempts=1)
    peer = Peer(_refused())
    for _ in range(4):
        with pytest.raises(RetryExhausted):
            guard.call(peer, operation="GetTask", peer="p")
    sleeps = list(clock.sleeps)
    with pytest.raises(PeerUnavailable) as caught:
        guard.call(peer, operation="GetTask", peer="p")
    failure = caught.value
    assert peer.sent == 4
    assert clock.sleeps == sleeps
    assert failure.retry_in == 5.0
    assert failure.state is BreakerState.OPEN
    assert failure.attempts == 0
    assert failure.peer == "p"
    assert not failure.maybe_processed
    assert failure.decision.give_up is GiveUp.PEER_UNAVAILABLE
    assert failure.decision.retry_after == 5.0
    assert isinstance(failure, CallFailed)
    names = [name for name, _ in hook.events]
    assert names[-3:] == ["decision", "peer_unavailable", "give_up"]
    assert [b.new for b in hook.breakers] == [BreakerState.OPEN]


def test_the_probe_call_closes_the_breaker_and_calls_flow_again() -> None:
    """After the cool-down the next call is the probe; its success closes the breaker."""
    clock = FakeClock()
    breaker = _breaker(clock)
    guard = _guard(clock, breaker, max_attempts=1)
    peer = Peer(_refused())
    _open(breaker)
    clock.advance(5.0)
    peer.outcome = OK
    assert guard.call(peer, operation="GetTask", peer="p") == OK
    assert breaker.state("p") is BreakerState.CLOSED


def test_task_not_found_bursts_and_failed_tasks_never_open_it() -> None:
    """A hundred TASK_NOT_FOUND and a hundred FAILED tasks: the breaker stays closed."""
    clock = FakeClock()
    breaker = _breaker(clock)
    guard = _guard(clock, breaker)
    missing = Peer(jsonrpc_error(-32001, "Task not found"))
    failed = Peer(FAILED_TASK)
    for _ in range(100):
        with pytest.raises(CallFailed):
            guard.call(missing, operation="GetTask", peer="p")
        guard.call(failed, operation="GetTask", peer="p")
    assert breaker.state("p") is BreakerState.CLOSED


def test_a_retry_refused_by_the_breaker_ends_the_call() -> None:
    """A call whose first attempt failed, then found the breaker open, raises PeerUnavailable."""
    clock = FakeClock()
    breaker = _breaker(clock, min_calls=1)
    guard = _guard(clock, breaker, max_attempts=3)
    peer = Peer(_refused())
    with pytest.raises(PeerUnavailable) as caught:
        guard.call(peer, operation="GetTask", peer="p")
    assert peer.sent == 1
    assert caught.value.attempts == 1


def test_a_bug_in_the_probe_frees_the_slot() -> None:
    """A probe call whose function raises a bug propagates it and lets the next call probe."""
    clock = FakeClock()
    breaker = _breaker(clock)
    guard = _guard(clock, breaker, max_attempts=1)
    _open(breaker)
    clock.advance(5.0)
    with pytest.raises(ZeroDivisionError):
        guard.call(lambda: 1 / 0, operation="GetTask", peer="p")
    assert breaker.admit("p").probe


def test_an_interrupted_probe_frees_the_slot() -> None:
    """A probe interrupted by a BaseException frees the slot too."""
    clock = FakeClock()
    breaker = _breaker(clock)
    guard = _guard(clock, breaker, max_attempts=1)
    _open(breaker)
    clock.advance(5.0)

    def interrupted() -> object:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        guard.call(interrupted, operation="GetTask", peer="p")
    assert breaker.admit("p").probe


def test_async_calls_fail_fast_and_probe_alike() -> None:
    """acall: an open breaker refuses at once; the probe closes it; a cancelled probe frees it."""
    clock = FakeClock()
    breaker = _breaker(clock)
    guard = _guard(clock, breaker, max_attempts=1)
    _open(breaker)

    async def ok() -> object:
        return OK

    async def main() -> None:
        with pytest.raises(PeerUnavailable):
            await guard.acall(ok, operation="GetTask", peer="p")
        clock.advance(5.0)

        async def hang() -> object:
            await asyncio.Event().wait()  # an attempt that never finishes (cancelled below)
            return OK

        task = asyncio.ensure_future(guard.acall(hang, operation="GetTask", peer="p"))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await guard.acall(ok, operation="GetTask", peer="p") == OK

    asyncio.run(main())
    assert breaker.state("p") is BreakerState.CLOSED


def test_an_async_breaker_is_awaited() -> None:
    """A breaker with aadmit (a shared store) is awaited by acall."""

    class Shared(CircuitBreaker):
        asked = 0

        async def aadmit(self, peer: str) -> Admission:
            Shared.asked += 1
            return self.admit(peer)

    guard = Guard(breaker=Shared())

    async def ok() -> object:
        return OK

    assert asyncio.run(guard.acall(ok, operation="GetTask", peer="p")) == OK
    assert Shared.asked == 1


def test_guard_transport_fails_fast_under_an_open_breaker() -> None:
    """Through GuardTransport: an open breaker raises PeerUnavailable, nothing reaches the wire."""
    clock = FakeClock()
    breaker = _breaker(clock)
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=OK)

    guard = _guard(clock, breaker, max_attempts=1)
    transport = GuardTransport(guard, httpx.MockTransport(handler))
    with httpx.Client(transport=transport) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "task-1"}}
        assert client.post("https://agent.example/", json=body).json() == OK
        _open(breaker, "https://agent.example:443")
        with pytest.raises(PeerUnavailable):
            client.post("https://agent.example/", json=body)
    assert len(sent) == 1


# --- forgetting idle peers ------------------------------------------------------------------


def test_breakers_of_idle_peers_are_forgotten_whatever_their_number() -> None:
    """100,000 hosts, one new each 10 ms: the breaker holds those of the last idle seconds."""
    clock = FakeClock()
    breaker = CircuitBreaker(idle=120.0, clock=clock, random=lambda: 0.0)
    held = []
    for n in range(100_000):
        peer = f"https://tenant-{n}.example:443"
        assert breaker.admit(peer).allowed
        breaker.record(peer, Verdict.UNWELL if n % 2 else Verdict.HEALTHY)
        clock.advance(0.01)
        if n % 1000 == 999:
            held.append(len(breaker.peers()))
    # Idle for 120 s, swept at most every 30 s: never more than 150 s of hosts.
    assert max(held) <= 150 / 0.01 + 1
    assert min(held[20:]) >= 120 / 0.01  # the recent ones are kept
    assert breaker.state("https://tenant-99999.example:443") is BreakerState.CLOSED


def test_a_peer_asked_about_is_kept_and_an_idle_open_one_comes_back_as_new() -> None:
    """An open breaker asked within idle is kept (its probe is due); a silent one is forgotten."""
    clock = FakeClock()
    breaker = CircuitBreaker(min_calls=2, idle=120.0, clock=clock, random=lambda: 0.0)
    for peer in ("asked", "silent"):
        for _ in range(2):
            breaker.record(peer, Verdict.UNWELL, retry_after=120.0)
        assert breaker.retry_in(peer) == 120.0
    clock.advance(110.0)
    refused = breaker.admit("asked")  # refused, and asked about: not idle
    assert (refused.allowed, refused.state) == (False, BreakerState.OPEN)
    clock.advance(90.0)  # 200 s: "silent" was last asked about 200 s ago, "asked" 90 s ago
    breaker.record("someone else", Verdict.HEALTHY)  # a use sweeps the idle peers
    assert sorted(breaker.peers()) == ["asked", "someone else"]
    assert breaker.state("asked") is BreakerState.HALF_OPEN
    assert breaker.admit("asked").probe  # its cool-down ended: one probe, as ever
    fresh = breaker.admit("silent")
    assert (fresh.allowed, fresh.probe) == (True, False)  # a new peer: closed, nothing counted
    assert breaker.state("silent") is BreakerState.CLOSED
    breaker.record("silent", Verdict.UNWELL)
    assert breaker.state("silent") is BreakerState.CLOSED  # one outcome: below min_calls again


def test_asking_about_a_state_keeps_nothing_alive_and_makes_nothing() -> None:
    """state() and retry_in() read: an unknown peer is not made, an idle one not kept."""
    clock = FakeClock()
    breaker = CircuitBreaker(min_calls=1, idle=120.0, clock=clock, random=lambda: 0.0)
    assert breaker.state("never") is BreakerState.CLOSED
    assert breaker.retry_in("never") == 0.0
    assert breaker.admit("never").allowed
    assert breaker.peers() == []
    breaker.record("watched", Verdict.UNWELL)
    for _ in range(10):
        clock.advance(30.0)
        breaker.state("watched")
        breaker.retry_in("watched")
    breaker.record("other", Verdict.HEALTHY)
    assert breaker.peers() == ["other"]


def test_idle_inf_never_forgets() -> None:
    """idle=math.inf keeps every peer, however long it is silent."""
    clock = FakeClock()
    breaker = CircuitBreaker(min_calls=1, idle=math.inf, clock=clock, random=lambda: 0.0)
    breaker.record("a", Verdict.UNWELL)
    clock.advance(1e9)
    breaker.record("b", Verdict.HEALTHY)
    assert sorted(breaker.peers()) == ["a", "b"]
    assert breaker.admit("a").probe


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.sampled_from(["unwell", "healthy", "admit"]), st.integers(0, 2)),
            st.tuples(st.just("advance"), st.sampled_from([0.5, 2.0, 5.0, 12.0, 20.0, 30.0, 45.0])),
        ),
        max_size=150,
    ),
    st.floats(0, 100),
)
def test_a_refusal_a_breaker_announced_is_kept_however_idle(
    steps: list[tuple[str, float]], retry_after: float
) -> None:
    """While retry_in said a peer's breaker stays open, admit refuses: never forgotten early."""
    clock = FakeClock()
    breaker = CircuitBreaker(
        min_calls=2,
        window=10.0,
        cooldown=5.0,
        max_cooldown=40.0,
        idle=40.0,
        clock=clock,
        random=lambda: 0.5,
    )
    promised: dict[str, float] = {}  # peer -> until when it was said to stay open
    probing: set[str] = set()
    for step, value in steps:
        if step == "advance":
            clock.advance(value)
            continue
        peer = f"p{int(value)}"
        if step == "admit":
            admission = breaker.admit(peer)
            if clock.now() < promised.get(peer, -1.0):
                assert not admission.allowed
            if admission.probe:
                probing.add(peer)
        else:
            verdict = Verdict.UNWELL if step == "unwell" else Verdict.HEALTHY
            probe = peer in probing
            probing.discard(peer)
            breaker.record(peer, verdict, probe=probe, retry_after=retry_after)
        left = breaker.retry_in(peer)
        if left > 0:
            promised[peer] = clock.now() + left

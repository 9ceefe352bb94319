"""Every call's outcome, told once: the CallRecord, on success and failure, and what counts it."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry

from a2a_client_errors import (
    AsyncGuardTransport,
    CallFailed,
    CircuitBreaker,
    Guard,
    GuardTransport,
    PeerUnavailable,
    ReconcileNeeded,
    RetryExhausted,
)
from a2a_client_errors._engine import CallShape as CallShapeFor
from a2a_client_errors._engine import recording
from a2a_client_errors._lookup import Found, Resolution
from a2a_client_errors.hooks import CallRecord, Hook
from a2a_client_errors.instrumentation import LoggingHook, OpenTelemetryHook, PrometheusHook
from a2a_client_errors.testing import FakeClock, RecordingHook
from tests.metrics_support import otel_points, otel_values

if TYPE_CHECKING:
    from collections.abc import Callable

TASK = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"id": "t-1", "status": {"state": "TASK_STATE_COMPLETED"}},
}
NOT_FOUND = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}
GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-1"}}
URL = "https://agent.example/a2a"


def _answers(*bodies: tuple[int, dict[str, Any]]) -> Callable[[httpx.Request], httpx.Response]:
    queue = list(bodies)

    def handler(request: httpx.Request) -> httpx.Response:
        status, body = queue.pop(0) if len(queue) > 1 else queue[0]
        return httpx.Response(status, json=body)

    return handler


def _unavailable() -> httpx.Response:
    return httpx.Response(503, json={"error": "busy"})


# --- the caller reads the record --------------------------------------------------------------


def test_a_success_on_the_plain_path_carries_its_record_in_the_response() -> None:
    """No hooks, no breaker: the fast path still puts the call's record in ``extensions``."""
    transport = GuardTransport(Guard(), httpx.MockTransport(_answers((200, TASK))))
    with httpx.Client(transport=transport) as client:
        response = client.post(URL, json=GET_TASK)
    record = response.extensions["a2a_call"]
    assert isinstance(record, CallRecord)
    assert (record.ok, record.attempts, record.operation) == (True, 1, "GetTask")
    assert record.peer == record.interface == "https://agent.example:443"
    assert record.delivery is None


def test_a_retried_success_says_how_many_attempts_it_took() -> None:
    """A 503 then the task: two attempts, told on the response and to ``on_call`` once."""
    hook = RecordingHook()
    handler = _answers((503, {"error": "busy"}), (200, TASK))
    transport = GuardTransport(
        Guard(sleep=lambda _: None, hooks=[hook]), httpx.MockTransport(handler)
    )
    with httpx.Client(transport=transport) as client:
        response = client.post(URL, json=GET_TASK)
    record = response.extensions["a2a_call"]
    assert (record.ok, record.attempts, record.operation) == (True, 2, "GetTask")
    assert hook.calls == [record]


async def test_the_async_transport_tells_the_record_of_a_failure_on_the_response() -> None:
    """A call error handed back (not raised) carries the failed call's record."""
    transport = AsyncGuardTransport(Guard(), httpx.MockTransport(_answers((200, NOT_FOUND))))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=GET_TASK)
    record = response.extensions["a2a_call"]
    assert (record.ok, record.outcome, record.attempts) == (False, "reconcile", 1)


def test_a_failure_carries_its_record() -> None:
    """``CallFailed.record`` is the call's record, the same one the hooks were told."""
    hook = RecordingHook()
    guard = Guard(hooks=[hook])
    with pytest.raises(ReconcileNeeded) as failed:
        guard.call(lambda: NOT_FOUND, operation="GetTask", peer="p")
    record = failed.value.record
    assert record is not None
    assert (record.outcome, record.peer, record.operation, record.attempts) == (
        "reconcile",
        "p",
        "GetTask",
        1,
    )
    assert hook.calls == [record]


def test_recording_collects_every_call_of_its_context() -> None:
    """``recording()`` sees successes and failures of Guard.call without any hook."""
    guard = Guard(sleep=lambda _: None)
    with recording() as calls:
        guard.call(lambda: TASK, operation="GetTask")
        with pytest.raises(CallFailed):
            guard.call(lambda: NOT_FOUND, operation="GetTask")
    guard.call(lambda: TASK, operation="GetTask")  # outside: not collected
    assert [(c.outcome, c.attempts) for c in calls] == [("ok", 1), ("reconcile", 1)]


async def test_the_record_says_when_the_deadline_cut_an_attempt() -> None:
    """An attempt cut short by the call's deadline is told: ``cut_short``."""
    guard = Guard(deadline=0.05, max_attempts=1)

    async def hangs() -> None:
        await asyncio.Event().wait()

    with pytest.raises(CallFailed) as failed:
        await guard.acall(hangs, operation="GetTask")
    assert failed.value.record is not None
    assert failed.value.record.cut_short


def test_the_record_says_how_a_lost_answer_was_resolved() -> None:
    """A send whose answer was lost, found by its look-up: resolution ``found``, ok."""
    attempts = iter([httpx.ReadTimeout("the answer was lost"), "the task"])

    def send() -> Any:
        outcome = next(attempts)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    guard = Guard(sleep=lambda _: None)
    with recording() as calls:
        assert guard.call(send, operation="SendMessage", lookup=lambda _: Found("found")) == "found"
    assert [(c.ok, c.resolution, c.maybe_processed) for c in calls] == [
        (True, Resolution.FOUND, True)
    ]


# --- told once, counted once ------------------------------------------------------------------


@pytest.mark.a2a_sdk("1")
async def test_a_stream_given_up_after_its_resubscriptions_is_one_failed_call() -> None:
    """Every resubscription cut: RetryExhausted, told to on_give_up and on_call once, counted."""
    from a2a_client_errors.integrations.a2a_sdk import guard_client
    from tests.test_a2a_sdk_streams import Scripted, _request

    registry = CollectorRegistry()
    hook = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[hook, PrometheusHook(registry=registry)])
    client = guard_client(Scripted(), guard, max_reconnects=2)
    with pytest.raises(RetryExhausted) as failed:
        async for _ in client.send_message(_request()):
            pass
    assert failed.value.record is not None
    assert [c.outcome for c in hook.calls if c.operation == "SendMessage"] == ["gave_up"]
    gave_up = [e for name, e in hook.events if name == "give_up" and e.operation == "SendMessage"]
    assert len(gave_up) == 1
    ok = registry.get_sample_value(
        "a2a_client_calls_total", {"method": "SendMessage", "peer": "other", "outcome": "ok"}
    )
    assert not ok
    gave_up = {"outcome": "gave_up", "method": "SendMessage"}
    assert _sum(registry, "a2a_client_calls_total", **gave_up, give_up="stream_started") == 1
    assert _sum(registry, "a2a_client_calls_total", outcome="retry") == 0


def _sum(registry: CollectorRegistry, name: str, **labels: str) -> float:
    total = 0.0
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def _open_through(guards: list[Guard], peer: str = "p") -> None:
    """Fail calls over the Guards in turn until their shared breaker opens."""
    for index in range(12):
        with pytest.raises(CallFailed):
            guards[index % len(guards)].call(_unavailable, operation="GetTask", peer=peer)


def test_an_opening_of_a_shared_breaker_is_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two Guards share one breaker and their hooks: one opening, one count, one log line."""
    clock = FakeClock()
    breaker = CircuitBreaker(clock=clock, min_calls=4)
    registry = CollectorRegistry()
    hooks: list[Hook] = [PrometheusHook(registry=registry), LoggingHook()]
    guards = [
        Guard(breaker=breaker, hooks=hooks, clock=clock, sleep=lambda _: None, max_attempts=1)
        for _ in range(2)
    ]
    with caplog.at_level(logging.INFO, logger="a2a_client_errors"):
        _open_through(guards)
    opened = _sum(registry, "a2a_client_circuit_breaker_transitions_total", state="open")
    assert opened == 1
    lines = [
        r
        for r in caplog.records
        if r.name == "a2a_client_errors.decisions" and "opened" in r.getMessage()
    ]
    assert len(lines) == 1


Exporter = tuple["Callable[[], Hook]", "Callable[[], float]"]
"""A metric hook's maker (each made on the same home) and the openings it counted."""


def _prometheus() -> Exporter:
    registry = CollectorRegistry()
    return (
        lambda: PrometheusHook(registry=registry),
        lambda: _sum(registry, "a2a_client_circuit_breaker_transitions_total", state="open"),
    )


def _opentelemetry() -> Exporter:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    transitions = "a2a.client.circuit_breaker.transitions"
    return (
        lambda: OpenTelemetryHook(meter_provider=provider),
        lambda: sum(otel_values(otel_points(reader), transitions, ("peer", "state")).values()),
    )


@pytest.mark.parametrize("exporter", [_prometheus, _opentelemetry])
def test_two_metric_hooks_on_one_home_count_a_shared_opening_once(
    exporter: Callable[[], Exporter],
) -> None:
    """Each Guard with its own hook on one registry (or meter provider): still one opening."""
    clock = FakeClock()
    breaker = CircuitBreaker(clock=clock, min_calls=4)
    make, opened = exporter()
    guards = [
        Guard(breaker=breaker, hooks=[make()], clock=clock, sleep=lambda _: None, max_attempts=1)
        for _ in range(2)
    ]
    _open_through(guards)
    assert opened() == 1


def test_a_breakers_refusal_is_not_an_error() -> None:
    """An open breaker refuses: counted as a call and a refusal, never in errors_total."""
    clock = FakeClock()
    breaker = CircuitBreaker(clock=clock, min_calls=4)
    registry = CollectorRegistry()
    hook = RecordingHook()
    guard = Guard(
        breaker=breaker,
        hooks=[PrometheusHook(registry=registry), hook],
        clock=clock,
        sleep=lambda _: None,
        max_attempts=1,
    )
    _open_through([guard])
    errors_before = _sum(registry, "a2a_client_errors_total")
    with pytest.raises(PeerUnavailable) as refused:
        guard.call(_unavailable, operation="GetTask", peer="p")
    assert _sum(registry, "a2a_client_errors_total") == errors_before
    assert _sum(registry, "a2a_client_errors_total", reason="UNSPECIFIED") == 0
    assert _sum(registry, "a2a_client_circuit_breaker_rejected_total") >= 1
    record = refused.value.record
    assert record is not None
    assert record.refused
    assert hook.calls[-1] is record


# --- the door API -----------------------------------------------------------------------------


def test_a_door_hands_over_its_own_first_attempt() -> None:
    """``first=``: the engine judges the door's attempt, then retries with ``fn`` itself."""
    from a2a_client_errors._engine import AttemptOutcome

    hook = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    sent: list[str] = []

    def attempt(text: str, *, suffix: str) -> dict[str, Any]:
        sent.append(text + suffix)
        return TASK

    call = guard.begin(peer="p", shape=CallShapeFor("GetTask"))
    first = AttemptOutcome(value=httpx.Response(503, json={"error": "busy"}))
    assert call.run(attempt, ("again",), {"suffix": "!"}, first=first) is TASK
    assert sent == ["again!"]
    record = call.end()
    assert call.end() is record  # made once
    assert (record.attempts, record.ok, record.peer) == (2, True, "p")
    assert hook.calls == [record]


async def test_an_async_door_runs_the_same_engine() -> None:
    """``arun``: the same decisions, awaiting what the attempt returns."""
    guard = Guard(sleep=lambda _: None)
    answers = iter([_unavailable(), TASK])

    async def attempt() -> Any:
        return next(answers)

    call = guard.begin(peer="p", shape=CallShapeFor("GetTask"))
    assert await call.arun(attempt) is TASK
    assert call.end().attempts == 2


def test_judge_decides_without_telling_or_spending() -> None:
    """``judge`` reads one answer by the Guard's policy: nothing told, no token spent."""
    hook = RecordingHook()
    guard = Guard(hooks=[hook])
    tokens = guard.budget_for("default").tokens
    assert guard.judge(NOT_FOUND, operation="GetTask").reason == "TASK_NOT_FOUND"
    assert guard.judge(TASK, operation="GetTask").action.value == "ok"
    assert hook.events == []
    assert hook.calls == []
    assert guard.budget_for("default").tokens == tokens


def test_a_door_ends_a_call_itself_once() -> None:
    """``end_call``: on_give_up and one record, the same however often it is asked."""
    hook = RecordingHook()
    guard = Guard(hooks=[hook])
    decision = guard.judge(NOT_FOUND, operation="GetTask")
    failure = ReconcileNeeded(decision)
    record = guard.end_call(failure, peer="p", operation="GetTask")
    assert guard.end_call(failure, peer="p", operation="GetTask") is record
    assert failure.record is record
    assert [name for name, _ in hook.events] == ["give_up"]
    assert hook.calls == [record]
    assert record.outcome == "reconcile"


def test_observe_that_ends_a_call_tells_its_record() -> None:
    """``observe(..., ends=True)``: the decision, the give-up (even of a retry), the record."""
    hook = RecordingHook()
    guard = Guard(hooks=[hook])
    decision = guard.judge(_unavailable(), operation="GetTask")
    assert decision.action.value == "retry"
    assert guard.observe(decision, peer="p", operation="GetTask") is None
    record = guard.observe(decision, peer="p", operation="GetTask", ends=True)
    assert record is not None
    assert record.outcome == "gave_up"  # the call ended: it is not retrying
    assert [name for name, _ in hook.events] == ["decision", "decision", "give_up"]
    assert hook.calls == [record]


# --- failing over, inside the engine ----------------------------------------------------------


def _not_sent() -> Any:
    raise httpx.ConnectError("refused", request=httpx.Request("POST", URL))


def test_the_engine_moves_a_call_that_sent_nothing_to_the_next_interface() -> None:
    """``fail_over``: the next interface's attempt runs in the same call; one record, told once."""
    from a2a_client_errors.types import Onward

    hook = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    asked: list[str] = []

    def fail_over(decision: Any) -> Onward | None:
        asked.append(decision.give_up.value)
        return Onward("rest", lambda: TASK, CallShapeFor("GetTask"))

    call = guard.begin(
        peer="jsonrpc", shape=CallShapeFor("GetTask", failover=True), fail_over=fail_over
    )
    assert call.run(_not_sent) is TASK
    assert asked == ["failover"]
    (moved,) = hook.failovers
    assert (moved.peer, moved.to, moved.why) == ("jsonrpc", "rest", "not_sent")
    (record,) = hook.calls
    assert (record.ok, record.peer, record.interface, record.attempts) == (True, "rest", "rest", 2)
    assert [name for name, _ in hook.events if name == "give_up"] == []


def test_an_open_breaker_moves_the_call_without_sending() -> None:
    """The breaker refuses the first interface: the call goes on over the next, said why."""
    from a2a_client_errors.types import Onward

    clock, hook = FakeClock(), RecordingHook()
    breaker = CircuitBreaker(clock=clock, min_calls=1)
    guard = Guard(sleep=lambda _: None, hooks=[hook], breaker=breaker, clock=clock, max_attempts=1)
    with pytest.raises(CallFailed):
        guard.call(_unavailable, operation="GetTask", peer="jsonrpc")
    sent: list[str] = []

    def over_rest() -> Any:
        sent.append("rest")
        return TASK

    call = guard.begin(
        peer="jsonrpc",
        shape=CallShapeFor("GetTask", failover=True),
        fail_over=lambda _: Onward("rest", over_rest, CallShapeFor("GetTask")),
    )
    assert call.run(_not_sent) is TASK
    assert sent == ["rest"]
    assert [(m.peer, m.to, m.why) for m in hook.failovers] == [("jsonrpc", "rest", "breaker_open")]
    assert call.end().attempts == 1  # nothing was sent over the refused interface


def test_no_next_interface_after_all_retries_where_it_is() -> None:
    """``fail_over`` finds none: the call is retried over its own interface, as any other."""
    hook = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[hook], max_attempts=2)
    answers = iter([_not_sent, lambda: TASK])

    def attempt() -> Any:
        return next(answers)()

    call = guard.begin(
        peer="jsonrpc", shape=CallShapeFor("GetTask", failover=True), fail_over=lambda _: None
    )
    assert call.run(attempt) is TASK
    assert hook.failovers == []
    assert call.end().attempts == 2


async def test_an_async_fail_over_is_awaited() -> None:
    """In ``arun``, ``fail_over`` may be a coroutine function; in ``run`` it may not."""
    from a2a_client_errors.types import Onward

    guard = Guard(sleep=lambda _: None)

    async def fail_over(_: Any) -> Onward:
        return Onward("rest", lambda: TASK, CallShapeFor("GetTask"))

    shape = CallShapeFor("GetTask", failover=True)
    assert await guard.begin(peer="a", shape=shape, fail_over=fail_over).arun(_not_sent) is TASK
    with pytest.raises(TypeError, match="arun"):
        guard.begin(peer="a", shape=shape, fail_over=fail_over).run(_not_sent)


def test_a_success_under_a_breaker_reads_its_request_only_when_its_record_is_asked() -> None:
    """A breaker takes the transport off its fast path: the record still parses nothing first."""
    described: list[str] = []
    guard = Guard(breaker=CircuitBreaker())
    transport = GuardTransport(guard, httpx.MockTransport(_answers((200, TASK))))
    original = transport._describe

    def describe(*args: Any) -> Any:
        described.append("read")
        return original(*args)

    transport._describe = describe  # type: ignore[method-assign]
    with httpx.Client(transport=transport) as client:
        response = client.post(URL, json=GET_TASK)
    record = response.extensions["a2a_call"]
    assert described == []
    assert record.operation == "GetTask"
    assert described == ["read"]

"""A guarded workload with every kind of decision, and readers of what the exporters recorded."""

from __future__ import annotations

import contextlib
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from a2a_client_errors import BudgetRegistry, CallFailed, CircuitBreaker, Guard, RetryBudget
from a2a_client_errors._breaker import BreakerFallback
from a2a_client_errors.hooks import BudgetFallback, FailoverEvent
from a2a_client_errors.instrumentation import Labels
from a2a_client_errors.journal import SqliteJournal
from a2a_client_errors.testing import FakeClock, RecordingHook, error_response
from a2a_client_errors.types import BudgetState, CallShape, Found

if TYPE_CHECKING:
    from collections.abc import Iterable

    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from prometheus_client import CollectorRegistry

    from a2a_client_errors import Hook

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

FAILED_TASK = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"task": {"id": "t-failed", "status": {"state": "TASK_STATE_FAILED"}}},
}
COMPLETED_TASK = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"task": {"id": "t-done", "status": {"state": "TASK_STATE_COMPLETED"}}},
}


class SharedBudgets(BudgetRegistry):
    """In-process budgets that tell, when asked, of a shared store going away and back.

    (What `RedisRetryBudget` tells its subscribers when Redis stops and starts answering.)
    """

    def __init__(self, factory: Any) -> None:
        super().__init__(factory)
        self.listeners: list[Any] = []

    def subscribe(self, listener: Any) -> None:
        """Keep a listener (the Guard subscribes when a hook wants budget fallbacks)."""
        self.listeners.append(listener)

    def tell(self, peer: str, state: BudgetState) -> None:
        """Tell every listener that ``peer``'s budget is now ``state``."""
        cause = "ConnectionError" if state is BudgetState.LOCAL else None
        event = BudgetFallback(peer, state, cause, True, self.get(peer).tokens)
        for listener in self.listeners:
            listener(event)


def workload(hooks: Iterable[Hook]) -> RecordingHook:
    """Run calls that end in every action (and in a spent budget) under one Guard.

    Returns the `RecordingHook` that saw the same events as ``hooks``.
    """
    recorder = RecordingHook()
    clock = FakeClock()
    guard = Guard(
        hooks=[*hooks, recorder],
        clock=clock.now,
        sleep=clock.sleep,
        random=lambda: 0.5,
        budget=(budgets := SharedBudgets(lambda: RetryBudget(capacity=3))),
    )

    def call(
        answer: Any,
        operation: str,
        peer: str = "https://billing.example:443",
        lookup: Any = None,
    ) -> None:
        with contextlib.suppress(CallFailed):
            guard.call(lambda: answer, operation=operation, peer=peer, lookup=lookup)

    call(error_response("INTERNAL_ERROR"), "GetTask")  # 2 retries, then retries spent
    call(error_response("INTERNAL_ERROR"), "GetTask")  # 1 retry, then the budget refuses
    call(error_response("TASK_NOT_CANCELABLE", binding="http+json"), "CancelTask")
    call(error_response("INVALID_AGENT_RESPONSE"), "SendMessage")
    call(error_response("SHINY_NEW_REASON"), "SendMessage")
    call(error_response("VERSION_NOT_SUPPORTED", binding="problem"), "SendMessage")
    call(httpx.Response(401), "GetTask", peer="https://search.example:443")
    call(httpx.Response(503, text="<html>proxy</html>"), "ListTasks", peer="other-peer")
    # Sends whose outcome is unknown (an internal error): found by the look-up, or not
    # looked up at all (OutcomeUnknown).
    call(error_response("INTERNAL_ERROR"), "SendMessage", lookup=lambda _: Found(COMPLETED_TASK))
    call(error_response("INTERNAL_ERROR"), "SendMessage", peer="https://search.example:443")
    call(FAILED_TASK, "SendMessage")  # a result: ok, never an error
    call(COMPLETED_TASK, "SendMessage")
    guard.record_task(FAILED_TASK, skill="summarise", peer="https://billing.example:443")
    guard.record_task(COMPLETED_TASK, skill="summarise", peer="https://billing.example:443")
    guard.record_task(COMPLETED_TASK, skill=None, peer="https://billing.example:443")
    budgets.tell("https://billing.example:443", BudgetState.LOCAL)  # Redis went away
    budgets.tell("https://billing.example:443", BudgetState.SHARED)  # and came back
    _breaker_workload([*hooks, recorder], clock)
    _journal_workload([*hooks, recorder], clock)
    return recorder


def _journal_workload(hooks: list[Hook], clock: FakeClock) -> None:
    """Journaled sends: recorded and settled, then the same messageId again (replayed)."""
    with tempfile.TemporaryDirectory() as folder:
        journal = SqliteJournal(Path(folder) / "sends.db")
        guard = Guard(hooks=hooks, clock=clock.now, sleep=clock.sleep, journal=journal)
        message = {"messageId": "m-metrics", "role": "user", "parts": [{"text": "hi"}]}
        for _ in range(2):
            with contextlib.suppress(CallFailed):
                guard.call(lambda: COMPLETED_TASK, peer="https://journal.example:443", sent=message)
        journal.close()


class _SharedBreaker(CircuitBreaker):
    """A local breaker that can say its shared store went away (as RedisCircuitBreaker does)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fallback_listeners: list[Any] = []

    def subscribe_fallback(self, listener: Any) -> None:
        self.fallback_listeners.append(listener)

    def tell(self, peer: str, state: BudgetState) -> None:
        for listener in self.fallback_listeners:
            listener(
                BreakerFallback(peer, state, "ConnectionError" if state.value == "local" else None)
            )


def _breaker_workload(hooks: list[Hook], clock: FakeClock) -> None:
    """A peer that goes down (its breaker opens, a call fails fast) and comes back (closes)."""
    breaker = _SharedBreaker(min_calls=2, clock=clock.now, random=lambda: 0.0)
    guard = Guard(hooks=hooks, clock=clock.now, sleep=clock.sleep, max_attempts=1, breaker=breaker)
    peer = "https://flaky.example:443"
    request = httpx.Request("POST", peer)

    def down() -> Any:
        raise httpx.ConnectError("refused", request=request)

    for _ in range(3):  # two failures open it, the third call fails fast
        with contextlib.suppress(CallFailed):
            guard.call(down, operation="GetTask", peer=peer)
    clock.advance(breaker.cooldown)
    task = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}},
    }
    guard.call(lambda: task, operation="GetTask", peer=peer)  # the probe closes it
    for _ in range(2):  # another peer stays down: its gauge reads open
        with contextlib.suppress(CallFailed):
            guard.call(down, operation="GetTask", peer="https://down.example:443")
    breaker.tell(peer, BudgetState.LOCAL)
    breaker.tell(peer, BudgetState.SHARED)
    _failover_workload(guard, down)


def _failover_workload(guard: Guard, down: Any) -> None:
    """A call refused over an agent's JSON-RPC interface moves to its HTTP+JSON one."""
    here, there = "https://multi.example/jsonrpc", "https://multi.example/rest"
    shape = CallShape("SendMessage", failover=True)
    try:
        guard.begin(peer=here, shape=shape).run(down)
    except CallFailed as failure:  # give-up failover: the integration moves the call on
        guard.tell("on_failover", FailoverEvent(failure.decision, here, there, "SendMessage"))


def expected(recorder: RecordingHook, labels: Labels | None = None) -> dict[str, Counter[Any]]:
    """What the exporters must have counted, derived from the recorded events alone.

    Calls come from the call records (one per call); errors from the decisions that hold a
    call error (an open breaker's refusal holds none).
    """
    labels = labels or Labels()
    found: dict[str, Counter[Any]] = {
        key: Counter() for key in ("calls", "errors", "retries", "exhausted")
    }
    for record in recorder.calls:
        found["calls"][
            Labels.method(record.operation),
            labels.peer(record.peer),
            record.outcome,
            Labels.give_up(record.decision),
        ] += 1
    for name, event in recorder.events:
        decision = event.decision
        method = Labels.method(event.operation)
        peer = labels.peer(event.peer)
        if name == "decision":
            if decision.action.value != "ok" and decision.error is not None:
                found["errors"][method, Labels.reason(decision), decision.action.value, peer] += 1
        elif name == "retry":
            found["retries"][method, Labels.reason(decision), peer] += 1
        elif name == "budget_exhausted":
            found["exhausted"][method, peer] += 1
    return found


def scrape(registry: CollectorRegistry) -> Samples:
    """Every sample of a registry, read back from its text exposition."""
    return parse(generate_latest(registry).decode())


def parse(text: str) -> Samples:
    """Every sample of a Prometheus text exposition."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= found)


def by_labels(samples: Samples, name: str, order: tuple[str, ...]) -> dict[tuple[str, ...], float]:
    """The non-zero samples of ``name``, keyed by their label values in ``order``."""
    out: dict[tuple[str, ...], float] = {}
    for (n, found), v in samples.items():
        if n == name and v:
            values = dict(found)
            out[tuple(values[label] for label in order)] = v
    return out


def otel_points(reader: InMemoryMetricReader) -> dict[str, dict[frozenset[tuple[str, Any]], Any]]:
    """Every data point an in-memory reader holds: instrument name -> attributes -> point."""
    data = reader.get_metrics_data()
    points: dict[str, dict[frozenset[tuple[str, Any]], Any]] = {}
    if data is None:
        return points
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found = points.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    found[frozenset((point.attributes or {}).items())] = point
    return points


def otel_values(
    points: dict[str, dict[frozenset[tuple[str, Any]], Any]], name: str, order: tuple[str, ...]
) -> dict[tuple[str, ...], float]:
    """The non-zero sums (or gauge values) of one instrument, keyed by attribute values."""
    out: dict[tuple[str, ...], float] = {}
    for attributes, point in points.get(name, {}).items():
        values = dict(attributes)
        number = getattr(point, "value", None)
        if number is None:
            number = point.count
        if number:
            out[tuple(str(values[label]) for label in order)] = number
    return out

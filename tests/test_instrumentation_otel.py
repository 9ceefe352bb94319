"""OpenTelemetryHook: the same counts as Prometheus, read back from an in-memory reader."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    HistogramDataPoint,
    InMemoryMetricReader,
)
from prometheus_client import CollectorRegistry

from a2a_client_errors import Guard
from a2a_client_errors.instrumentation import METRICS, OpenTelemetryHook, PrometheusHook
from tests.metrics_support import by_labels, expected, otel_points, otel_values, scrape, workload

BILLING = "https://billing.example:443"


def _reader() -> tuple[InMemoryMetricReader, MeterProvider]:
    reader = InMemoryMetricReader()
    return reader, MeterProvider(metric_readers=[reader])


def test_the_workload_is_recorded_as_its_events_say() -> None:
    """Calls, errors, retries and refusals equal what the events say, attribute by attribute."""
    reader, provider = _reader()
    recorder = workload([OpenTelemetryHook(meter_provider=provider)])
    points = otel_points(reader)
    want = expected(recorder)
    assert (
        otel_values(points, "a2a.client.calls", ("method", "peer", "outcome", "give_up"))
        == want["calls"]
    )
    assert (
        otel_values(points, "a2a.client.errors", ("method", "reason", "action", "peer"))
        == want["errors"]
    )
    assert (
        otel_values(points, "a2a.client.retries", ("method", "reason", "peer")) == want["retries"]
    )
    assert (
        otel_values(points, "a2a.client.retry_budget.exhausted", ("method", "peer"))
        == want["exhausted"]
    )


def test_prometheus_and_opentelemetry_agree() -> None:
    """One workload, both hooks: every metric holds the same numbers under the same labels."""
    reader, provider = _reader()
    registry = CollectorRegistry()
    workload([OpenTelemetryHook(meter_provider=provider), PrometheusHook(registry=registry)])
    points = otel_points(reader)
    samples = scrape(registry)
    for spec in METRICS:
        otel = otel_values(points, f"a2a.client.{spec.otel}", spec.labels)
        name = f"a2a_client_{spec.prometheus}"
        if spec.kind == "counter":
            name += "_total"
        elif spec.kind == "histogram":
            name += "_count"
        assert otel == by_labels(samples, name, spec.labels), spec.key
        assert otel, f"the workload exercises {spec.key}"


def test_instruments_carry_units_and_delays() -> None:
    """The delay histogram is in seconds, with its sum; counters carry count units."""
    reader, provider = _reader()
    recorder = workload([OpenTelemetryHook(meter_provider=provider)])
    data = reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert metrics["a2a.client.retry.delay"].unit == "s"
    assert metrics["a2a.client.errors"].unit == "{error}"
    delays = [e.decision.delay for name, e in recorder.events if name == "retry"]
    points = metrics["a2a.client.retry.delay"].data.data_points
    assert all(isinstance(point, HistogramDataPoint) for point in points)
    assert sum(point.sum for point in points) == pytest.approx(sum(delays))
    assert list(points[0].explicit_bounds)[:3] == [0.01, 0.025, 0.05]


def test_failed_tasks_are_outcomes_never_errors() -> None:
    """Task outcomes are their own instrument, by skill; no error attribute names a task state."""
    reader, provider = _reader()
    workload([OpenTelemetryHook(meter_provider=provider)])
    points = otel_points(reader)
    assert otel_values(points, "a2a.client.task.outcomes", ("skill", "state", "peer")) == {
        ("summarise", "TASK_STATE_FAILED", BILLING): 1,
        ("summarise", "TASK_STATE_COMPLETED", BILLING): 1,
        ("unknown", "TASK_STATE_COMPLETED", BILLING): 1,
    }
    reasons = {dict(attributes)["reason"] for attributes in points["a2a.client.errors"]}
    assert not {reason for reason in reasons if reason.startswith("TASK_STATE")}


def test_a_meter_given_is_used_as_it_is() -> None:
    """``meter=`` wins over the provider, and a prefix renames the instruments."""
    reader, provider = _reader()
    hook = OpenTelemetryHook(meter=provider.get_meter("mine"), prefix="orchestrator.a2a")
    guard = Guard(hooks=[hook])
    task = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}},
    }
    guard.call(lambda: task, operation="GetTask", peer="billing")
    data = reader.get_metrics_data()
    assert data is not None
    scopes = {s.scope.name: s for r in data.resource_metrics for s in r.scope_metrics}
    assert set(scopes) == {"mine"}
    assert "orchestrator.a2a.calls" in {m.name for m in scopes["mine"].metrics}


def test_the_global_provider_by_default() -> None:
    """Without a provider the global one is asked: the API's no-op meter records nothing, fine."""
    hook = OpenTelemetryHook()
    guard = Guard(hooks=[hook])
    task = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}},
    }
    assert guard.call(lambda: task, operation="GetTask") is task
    assert guard.record_task(task, skill="x") is not None


def _task_call(guard: Guard, peer: str = BILLING) -> None:
    task = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}},
    }
    guard.call(lambda: task, operation="GetTask", peer=peer)


def test_counts_are_totals_the_sdk_reads_when_it_collects() -> None:
    """A call adds to the hook's tally; each collection reads the totals, cumulative."""
    reader, provider = _reader()
    guard = Guard(hooks=[OpenTelemetryHook(meter_provider=provider)])
    calls = ("method", "peer", "outcome", "give_up")
    for _ in range(3):
        _task_call(guard)
    assert otel_values(otel_points(reader), "a2a.client.calls", calls) == {
        ("GetTask", BILLING, "ok", ""): 3
    }
    for _ in range(2):
        _task_call(guard)
    data = reader.get_metrics_data()
    assert data is not None
    (metric,) = [
        m
        for r in data.resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == "a2a.client.calls"
    ]
    assert metric.data.is_monotonic
    assert metric.data.aggregation_temporality == AggregationTemporality.CUMULATIVE
    assert [point.value for point in metric.data.data_points] == [5]


def test_a_delta_reader_gets_what_each_interval_added() -> None:
    """An exporter that prefers delta temporality reads each interval's calls, not the total."""
    reader = InMemoryMetricReader(
        preferred_temporality={ObservableCounter: AggregationTemporality.DELTA}
    )
    guard = Guard(hooks=[OpenTelemetryHook(meter_provider=MeterProvider(metric_readers=[reader]))])
    calls = ("method", "peer", "outcome", "give_up")
    seen = []
    for batch in (4, 0, 2):
        for _ in range(batch):
            _task_call(guard)
        seen.append(otel_values(otel_points(reader), "a2a.client.calls", calls))
    ok = ("GetTask", BILLING, "ok", "")
    assert seen == [{ok: 4}, {}, {ok: 2}]


def test_no_count_is_lost_to_threads_counting_at_once() -> None:
    """8 threads, 300 calls each, switching as often as the interpreter lets: 2,400 counted."""
    reader, provider = _reader()
    guard = Guard(hooks=[OpenTelemetryHook(meter_provider=provider)])
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as pool:
            for done in [
                pool.submit(lambda: [_task_call(guard) for _ in range(300)]) for _ in range(8)
            ]:
                done.result()
    finally:
        sys.setswitchinterval(switching)
    calls = ("method", "peer", "outcome", "give_up")
    assert otel_values(otel_points(reader), "a2a.client.calls", calls) == {
        ("GetTask", BILLING, "ok", ""): 2400
    }


def test_hooks_on_one_meter_share_the_instruments_and_their_counts() -> None:
    """Two Guards, each with its own hook on one provider: every call of both is counted."""
    reader, provider = _reader()
    first, second = (Guard(hooks=[OpenTelemetryHook(meter_provider=provider)]) for _ in range(2))
    for guard in (first, second, second):
        _task_call(guard)
    calls = ("method", "peer", "outcome", "give_up")
    assert otel_values(otel_points(reader), "a2a.client.calls", calls) == {
        ("GetTask", BILLING, "ok", ""): 3
    }


def test_other_buckets_on_the_same_meter_and_prefix_are_refused() -> None:
    """One bucket layout per meter and prefix: the SDK would keep the first histogram's."""
    _, provider = _reader()
    OpenTelemetryHook(meter_provider=provider)
    with pytest.raises(ValueError, match="buckets"):
        OpenTelemetryHook(meter_provider=provider, buckets=(1.0, 2.0))
    OpenTelemetryHook(meter_provider=provider, prefix="other.prefix", buckets=(1.0, 2.0))


class _SlottedMeter:
    """A meter that cannot be weakly referenced (no ``__weakref__`` slot)."""

    __slots__ = ("_meter",)

    def __init__(self, meter: Any) -> None:
        self._meter = meter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._meter, name)


def test_a_meter_that_cannot_be_weakly_referenced_still_counts() -> None:
    """Its instruments are its hook's own (nothing to share them by): the calls are counted."""
    reader, provider = _reader()
    guard = Guard(hooks=[OpenTelemetryHook(meter=_SlottedMeter(provider.get_meter("x")))])
    _task_call(guard)
    calls = ("method", "peer", "outcome", "give_up")
    assert otel_values(otel_points(reader), "a2a.client.calls", calls) == {
        ("GetTask", BILLING, "ok", ""): 1
    }

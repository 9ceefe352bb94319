"""PrometheusHook: counts by reason, task outcomes apart, read back from a real registry."""

from __future__ import annotations

import httpx
import prometheus_client
import pytest
from prometheus_client import CollectorRegistry

from a2a_client_errors import (
    BudgetRegistry,
    CallFailed,
    Guard,
    ReconcileNeeded,
    RetryBudget,
    RetryExhausted,
)
from a2a_client_errors.instrumentation import PrometheusHook, prometheus_series
from a2a_client_errors.testing import FakeClock, error_response
from tests.conftest import agent_unavailable
from tests.metrics_support import by_labels, expected, scrape, value, workload

BILLING = "https://billing.example:443"
TASK = {"jsonrpc": "2.0", "id": 1, "result": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}}


def test_the_workload_is_counted_as_its_events_say() -> None:
    """Calls, errors, retries and refusals scraped equal what the events say, label by label."""
    registry = CollectorRegistry()
    recorder = workload([PrometheusHook(registry=registry)])
    samples = scrape(registry)
    want = expected(recorder)
    assert (
        by_labels(samples, "a2a_client_calls_total", ("method", "peer", "outcome", "give_up"))
        == want["calls"]
    )
    assert (
        by_labels(samples, "a2a_client_errors_total", ("method", "reason", "action", "peer"))
        == want["errors"]
    )
    assert (
        by_labels(samples, "a2a_client_retries_total", ("method", "reason", "peer"))
        == want["retries"]
    )
    assert (
        by_labels(samples, "a2a_client_retry_budget_exhausted_total", ("method", "peer"))
        == want["exhausted"]
    )


def test_a_call_that_gave_up_is_counted_as_given_up_never_as_retrying() -> None:
    """``outcome="gave_up"`` with why in ``give_up``; a call that did not give up has no reason.

    Three calls of a peer that answers 503: out of attempts, out of budget, and out of time
    (its deadline too near for the pause); then a success. None is counted ``retry``.
    """
    registry = CollectorRegistry()
    hook = PrometheusHook(registry=registry)
    unavailable = agent_unavailable()
    spent = RetryBudget(capacity=0.0)
    clock = FakeClock()
    for guard in (
        Guard(hooks=[hook], sleep=lambda _: None, max_attempts=2),
        Guard(hooks=[hook], sleep=lambda _: None, budget=spent),
        Guard(hooks=[hook], clock=clock, sleep=clock.sleep, deadline=0.1, random=lambda: 1.0),
    ):
        with pytest.raises(CallFailed):
            guard.call(lambda: unavailable, operation="GetTask", peer=BILLING)
    Guard(hooks=[hook]).call(lambda: TASK, operation="GetTask", peer=BILLING)
    samples = scrape(registry)
    calls = by_labels(samples, "a2a_client_calls_total", ("outcome", "give_up"))
    assert calls == {
        ("gave_up", "attempts"): 1,
        ("gave_up", "budget"): 1,
        ("gave_up", "deadline"): 1,
        ("ok", ""): 1,
    }


def test_errors_are_counted_by_reason_not_by_status() -> None:
    """Seven reasons share HTTP 400; each is its own series, and unknown reasons fold to OTHER."""
    registry = CollectorRegistry()
    workload([PrometheusHook(registry=registry)])
    samples = scrape(registry)
    errors = "a2a_client_errors_total"
    assert value(samples, errors, reason="TASK_NOT_CANCELABLE", action="reconcile") == 1
    assert value(samples, errors, reason="INVALID_AGENT_RESPONSE", action="report") == 1
    assert value(samples, errors, reason="VERSION_NOT_SUPPORTED", peer=BILLING) == 1
    assert value(samples, errors, reason="OTHER", method="SendMessage") == 1
    assert value(samples, errors, reason="SHINY_NEW_REASON") == 0
    assert value(samples, errors, reason="UNAUTHENTICATED", action="auth") == 1
    assert value(samples, errors, reason="HTTP_503", method="ListTasks") == 3
    # 3 + 2 attempts of two GetTasks, and one attempt of each of two sends (looked up).
    assert value(samples, errors, reason="INTERNAL_ERROR") == 7
    unknown = by_labels(
        samples, "a2a_client_unknown_outcomes_total", ("method", "peer", "resolution")
    )
    assert unknown == {
        ("SendMessage", BILLING, "found"): 1,
        ("SendMessage", "https://search.example:443", "unresolved"): 1,
    }


def test_failed_tasks_are_outcomes_never_errors() -> None:
    """A FAILED task is counted by skill and state, and in no error series."""
    registry = CollectorRegistry()
    workload([PrometheusHook(registry=registry)])
    samples = scrape(registry)
    outcomes = by_labels(samples, "a2a_client_task_outcomes_total", ("skill", "state", "peer"))
    assert outcomes == {
        ("summarise", "TASK_STATE_FAILED", BILLING): 1,
        ("summarise", "TASK_STATE_COMPLETED", BILLING): 1,
        ("unknown", "TASK_STATE_COMPLETED", BILLING): 1,
    }
    # The two calls that returned tasks were ok calls, and so was the send whose task the
    # look-up found; no error series speaks of them.
    assert (
        value(
            samples,
            "a2a_client_calls_total",
            method="SendMessage",
            outcome="ok",
            peer="https://billing.example:443",
        )
        == 3
    )
    assert not [
        labels for (name, labels) in samples if "TASK_STATE" in str(labels) and "errors" in name
    ]


def test_retry_delays_and_budget_are_observed() -> None:
    """Each retry's delay lands in the histogram; the gauge shows the budget's tokens."""
    registry = CollectorRegistry()
    recorder = workload([PrometheusHook(registry=registry)])
    samples = scrape(registry)
    delays = [e.decision.delay for name, e in recorder.events if name == "retry"]
    assert value(samples, "a2a_client_retry_delay_seconds_count") == len(delays) == 5
    assert value(samples, "a2a_client_retry_delay_seconds_sum") == pytest.approx(sum(delays))
    assert value(samples, "a2a_client_retry_delay_seconds_bucket", le="+Inf") == 5
    last_tokens = {
        e.peer: e.budget_tokens for _, e in recorder.events if e.budget_tokens is not None
    }
    for peer, tokens in last_tokens.items():
        assert value(samples, "a2a_client_retry_budget_tokens", peer=peer) == tokens


def test_exported_names_are_the_declared_ones() -> None:
    """Every series the registry holds is one `prometheus_series` declares, with its labels."""
    registry = CollectorRegistry()
    workload([PrometheusHook(registry=registry)])
    declared = prometheus_series()
    for name, labels in scrape(registry):
        assert name in declared, name
        assert {label for label, _ in labels} == set(declared[name]), name


def test_peers_and_skills_are_folded() -> None:
    """With an allow-list, every other peer and skill is "other" in the scrape."""
    registry = CollectorRegistry()
    hook = PrometheusHook(registry=registry, peers=[BILLING], skills=["translate"])
    workload([hook])
    samples = scrape(registry)
    peers = {dict(labels).get("peer") for (_, labels) in samples} - {None}
    assert peers == {BILLING, "other"}
    skills = {dict(labels)["skill"] for (name, labels) in samples if "task_outcomes" in name}
    assert skills == {"other", "unknown"}


def test_hooks_share_the_metrics_of_a_registry() -> None:
    """Two hooks on one registry and prefix count into the same series."""
    registry = CollectorRegistry()
    guards = [Guard(hooks=[PrometheusHook(registry=registry)]) for _ in range(2)]
    for guard in guards:
        guard.call(lambda: TASK, operation="GetTask")
    assert value(scrape(registry), "a2a_client_calls_total", outcome="ok") == 2


def test_the_default_registry_and_a_prefix() -> None:
    """Without ``registry=`` the global one is used; a prefix renames every series."""
    hook = PrometheusHook(prefix="a2a_test_default")
    assert hook.registry is prometheus_client.REGISTRY
    Guard(hooks=[hook]).call(lambda: TASK, operation="GetTask")
    samples = scrape(prometheus_client.REGISTRY)
    assert value(samples, "a2a_test_default_calls_total", method="GetTask") >= 1


def test_bad_prefixes_and_bucket_clashes_are_refused() -> None:
    """A prefix that is no metric name, or other buckets for registered metrics, is refused."""
    with pytest.raises(ValueError, match="prefix"):
        PrometheusHook(registry=CollectorRegistry(), prefix="a2a-client")
    registry = CollectorRegistry()
    PrometheusHook(registry=registry)
    with pytest.raises(ValueError, match="buckets"):
        PrometheusHook(registry=registry, buckets=(1.0, 2.0))
    PrometheusHook(registry=registry, prefix="other_prefix", buckets=(1.0, 2.0))  # fine


def test_a_name_taken_by_someone_else_is_an_error() -> None:
    """If the registry already holds a metric of that name, creating the hook says so."""
    registry = CollectorRegistry()
    prometheus_client.Counter("a2a_client_calls", "someone else's", registry=registry)
    with pytest.raises(ValueError, match="a2a_client_calls"):
        PrometheusHook(registry=registry)


def test_a_broken_registry_never_changes_the_outcome(caplog: pytest.LogCaptureFixture) -> None:
    """If recording fails, the call's result and exception stay what they were."""
    registry = CollectorRegistry()
    hook = PrometheusHook(registry=registry)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("metrics backend down")

    hook._child = broken  # type: ignore[method-assign]
    guard = Guard(hooks=[hook], sleep=lambda _: None)
    ok = TASK
    with caplog.at_level("ERROR", logger="a2a_client_errors"):
        assert guard.call(lambda: ok, operation="GetTask") is ok
        with pytest.raises(ReconcileNeeded):
            guard.call(lambda: error_response("TASK_NOT_FOUND"), operation="GetTask")
        with pytest.raises(RetryExhausted):
            guard.call(lambda: httpx.Response(503), operation="GetTask")
        assert guard.record_task(ok) is not None
    assert any("hook on_decision failed" in r.getMessage() for r in caplog.records)


def test_the_budget_gauge_follows_a_budget_two_guards_share() -> None:
    """Two guards, one budget per peer, one registry: the gauge always shows the budget."""
    registry = CollectorRegistry()
    shared = BudgetRegistry(lambda: RetryBudget(capacity=10))
    guards = [
        Guard(hooks=[PrometheusHook(registry=registry)], budget=shared, sleep=lambda _: None)
        for _ in range(2)
    ]
    answers = iter([httpx.Response(503), TASK])
    steps = [
        (guards[0], lambda: TASK),
        (guards[1], lambda: next(answers)),  # a retry spends a token, the success credits
        (guards[0], lambda: TASK),  # back to full: the gauge must say so
    ]
    for guard, answer in steps:
        guard.call(answer, operation="GetTask", peer="p")
        tokens = shared.get("p").tokens
        assert value(scrape(registry), "a2a_client_retry_budget_tokens", peer="p") == tokens
    assert shared.get("p").tokens == 10

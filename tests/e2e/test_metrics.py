"""Metrics of a guarded workload against the real peer, read back as an operator would.

Prometheus is scraped over HTTP from prometheus_client's own server on 127.0.0.1 (and checked
against ``generate_latest``); OpenTelemetry is read from the SDK's in-memory reader.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import httpx
import pytest
from a2a.types import a2a_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry, start_http_server

from a2a_client_errors import CallFailed, Guard, ReconcileNeeded, RetryExhausted
from a2a_client_errors.instrumentation import LoggingHook, OpenTelemetryHook, PrometheusHook
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.testing.peer import capture_jsonrpc
from tests.e2e.sdk import BINDINGS, sdk_client
from tests.metrics_support import (
    Samples,
    by_labels,
    otel_points,
    otel_values,
    parse,
    scrape,
    value,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e

PEER = "embedded"


def _message(text: str, skill: str | None = None) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)])
    if skill is not None:
        message.metadata["skill"] = skill
    return a2a_pb2.SendMessageRequest(message=message)


@contextlib.contextmanager
def _exposed(registry: CollectorRegistry) -> Iterator[str]:
    """prometheus_client's HTTP server for ``registry`` on a free port of 127.0.0.1."""
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


async def _workload(
    peer: EmbeddedPeer, binding: str, guard: Guard, *, streaming: bool = True
) -> None:
    """Tasks that complete and fail, a lost cancel, an unknown task, a refused card, retries."""
    client, http = await sdk_client(peer, binding, guard=guard, streaming=streaming)
    client.peer = PEER
    try:
        done = [e async for e in client.send_message(_message("hello"), skill="echo")]
        failed = [e async for e in client.send_message(_message("fail", skill="echo"))]
        done_id = done[0].task.id
        failed_id = failed[0].task.id
        # Read again: the same final states are not counted twice, and keep their skill.
        await client.get_task(a2a_pb2.GetTaskRequest(id=failed_id))
        await client.get_task(a2a_pb2.GetTaskRequest(id=done_id))
        # CancelTask of a completed task: TASK_NOT_CANCELABLE, reconciled into the task.
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id=done_id))
        with pytest.raises(ReconcileNeeded):
            await client.get_task(a2a_pb2.GetTaskRequest(id="no-such-task"))
        await client.get_extended_agent_card()  # degraded to the public card
        # The executor raises after a2a-sdk made the task: that FAILED task is the answer
        # (found by the look-up where the answer was an error), never a second task.
        raised = [e async for e in client.send_message(_message("raise", skill="echo"))]
        assert raised[-1].task.status.state == a2a_pb2.TaskState.TASK_STATE_FAILED
    finally:
        await client.close()
        await http.aclose()
    # A hop's 503 on a read: retried, then the retries are spent.
    with pytest.raises(RetryExhausted):
        await guard.acall(lambda: httpx.Response(503), operation="GetTask", peer=PEER)
    # A peer's VERSION_NOT_SUPPORTED, as its JSON-RPC binding sent it, judged by the same Guard.
    refused = capture_jsonrpc(peer, "version_not_supported")
    with pytest.raises(CallFailed):
        await guard.acall(lambda: refused, operation="SendMessage", peer=PEER)


def _assert_counted(samples: Samples, recorder: RecordingHook) -> None:
    errors = "a2a_client_errors_total"
    assert value(samples, errors, reason="TASK_NOT_CANCELABLE", method="CancelTask") == 1
    assert value(samples, errors, reason="TASK_NOT_FOUND", action="reconcile") == 1
    assert value(samples, errors, reason="EXTENDED_AGENT_CARD_NOT_CONFIGURED") == 1
    assert value(samples, errors, reason="VERSION_NOT_SUPPORTED", action="fix_request") == 1
    retries = [e for name, e in recorder.events if name == "retry"]
    assert retries
    assert value(samples, "a2a_client_retries_total", method="GetTask") == len(retries)
    assert value(samples, "a2a_client_retry_delay_seconds_count") == len(retries)
    assert value(samples, "a2a_client_calls_total", outcome="gave_up") == 1
    assert value(samples, "a2a_client_calls_total", outcome="retry") == 0  # none is retrying
    assert value(samples, "a2a_client_calls_total", outcome="reconcile") == 2
    assert value(samples, "a2a_client_calls_total", outcome="degrade") == 1
    assert value(samples, "a2a_client_retry_budget_tokens", peer=PEER) > 0
    # Task outcomes: one per task and final state, by skill, and none of them an error.
    outcomes = by_labels(samples, "a2a_client_task_outcomes_total", ("skill", "state", "peer"))
    assert outcomes == {
        ("echo", "TASK_STATE_COMPLETED", PEER): 1,
        ("echo", "TASK_STATE_FAILED", PEER): 2,
    }
    assert not [labels for (name, labels) in samples if name == errors and "FAILED" in str(labels)]


@pytest.mark.parametrize(
    ("binding", "streaming"), [*((b, True) for b in BINDINGS), ("jsonrpc", False)]
)
async def test_metrics_of_a_real_workload(
    peer: EmbeddedPeer, binding: str, *, streaming: bool
) -> None:
    """Scraped over HTTP and read in memory, both exporters count the workload alike."""
    registry = CollectorRegistry()
    reader = InMemoryMetricReader()
    recorder = RecordingHook()
    guard = Guard(
        sleep=lambda _: None,
        hooks=[
            PrometheusHook(registry=registry, skills=["echo"]),
            OpenTelemetryHook(meter_provider=MeterProvider(metric_readers=[reader])),
            LoggingHook(),
            recorder,
        ],
    )
    await _workload(peer, binding, guard, streaming=streaming)
    with _exposed(registry) as url:
        response = httpx.get(url, timeout=10)
    assert response.status_code == 200
    scraped = parse(response.text)
    _assert_counted(scraped, recorder)
    created = {key for key in scraped if key[0].endswith("_created")}
    assert {k: v for k, v in scraped.items() if k not in created} == {
        k: v for k, v in scrape(registry).items() if k not in created
    }
    points = otel_points(reader)
    for name, metric, labels in (
        ("a2a.client.errors", "a2a_client_errors_total", ("method", "reason", "action", "peer")),
        ("a2a.client.calls", "a2a_client_calls_total", ("method", "peer", "outcome")),
        ("a2a.client.task.outcomes", "a2a_client_task_outcomes_total", ("skill", "state", "peer")),
        ("a2a.client.retries", "a2a_client_retries_total", ("method", "reason", "peer")),
    ):
        assert otel_values(points, name, labels) == by_labels(scraped, metric, labels), name


async def test_without_hooks_the_same_workload_runs_alike(peer: EmbeddedPeer) -> None:
    """The workload needs no hook: the same calls end the same way with none."""
    await _workload(peer, "jsonrpc", Guard(sleep=lambda _: None))


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_degraded_stream_tells_its_task_once_with_its_skill(
    peer_no_streaming: EmbeddedPeer, binding: str
) -> None:
    """A refused stream, sent again and polled: its final task is one outcome, of its skill."""
    card = a2a_pb2.AgentCard()
    card.CopyFrom(peer_no_streaming.agent_card)
    card.capabilities.streaming = True  # the card says so; the server says no
    registry = CollectorRegistry()
    guard = Guard(sleep=lambda _: None, hooks=[PrometheusHook(registry=registry)])
    client, http = await sdk_client(peer_no_streaming, binding, guard=guard, card=card)
    client.peer = PEER
    try:
        events = [e async for e in client.send_message(_message("hello"), skill="echo")]
    finally:
        await client.close()
        await http.aclose()
    assert events
    samples = scrape(registry)
    assert value(samples, "a2a_client_errors_total", reason="UNSUPPORTED_OPERATION") == 1
    assert by_labels(samples, "a2a_client_task_outcomes_total", ("skill", "state", "peer")) == {
        ("echo", "TASK_STATE_COMPLETED", PEER): 1
    }

"""Metrics by reason: a guarded workload against a real peer, scraped as Prometheus would.

A Guard with a `PrometheusHook` runs a small workload against an embedded a2a-sdk peer on
127.0.0.1: tasks that complete and fail, a cancel that lost the race, an unknown task, an
extended card that is not configured, a peer that keeps failing until its retry budget is
spent, and a version the peer refuses. prometheus_client's own HTTP server exposes the
metrics on a free port of 127.0.0.1; httpx scrapes them, and the lines are printed by reason.

Note what is *not* an error: the FAILED task is counted under ``a2a_client_task_outcomes_total``
by skill, and appears in no error series.

Run it with ``python examples/metrics_scrape.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from a2a_client_errors import CallFailed, Guard, Policy, RetryBudget
from a2a_client_errors.instrumentation import PrometheusHook
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing.peer import EmbeddedPeer, capture_jsonrpc
from a2a_client_errors.types import Backoff

PEER = "embedded-peer"


def _message(text: str) -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)])
    )


async def workload(peer: EmbeddedPeer, guard: Guard) -> None:
    """Successes, task outcomes and errors of every kind, through a guarded a2a-sdk client."""
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
    config = ClientConfig(
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    client = guard_client(ClientFactory(config).create(peer.agent_card), guard, peer=PEER)
    try:
        done = [event async for event in client.send_message(_message("hi"), skill="echo")]
        async for _ in client.send_message(_message("fail"), skill="echo"):
            pass  # a FAILED task: a result, counted by skill, never as an error
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id=done[0].task.id))  # lost race
        with contextlib.suppress(CallFailed):
            await client.get_task(a2a_pb2.GetTaskRequest(id="task-from-yesterday"))
        await client.get_extended_agent_card()  # not configured: the public card instead
        # The executor raises after a2a-sdk made the task: that FAILED task is the answer
        # (where the answer was an error, the look-up finds it), never a second task.
        async for _ in client.send_message(_message("raise"), skill="echo"):
            pass
    finally:
        await client.close()
        await http.aclose()
    for _ in range(2):  # an internal error on a read: retried, until the budget says no
        with contextlib.suppress(CallFailed):
            await guard.acall(lambda: _INTERNAL, operation="GetTask", peer=PEER)
    refused = capture_jsonrpc(peer, "version_not_supported")  # what a 1.0-only peer sends
    with contextlib.suppress(CallFailed):
        guard.call(lambda: refused, operation="SendMessage", peer=PEER)


_INTERNAL = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal"}}


def scrape(registry: CollectorRegistry) -> str:
    """Expose ``registry`` over HTTP on a free port of 127.0.0.1 and scrape it once."""
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        response = httpx.get(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10)
        response.raise_for_status()
        return response.text
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def main() -> None:
    """Run the workload, scrape the metrics, print them by reason."""
    registry = CollectorRegistry()
    guard = Guard(
        hooks=[PrometheusHook(registry=registry, skills=["echo"])],
        policy=Policy().with_backoff(Backoff(initial=0.02, multiplier=2, cap=0.1)),
        budget=RetryBudget(capacity=2),
    )
    with EmbeddedPeer() as peer:
        asyncio.run(workload(peer, guard))
    text = scrape(registry)
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.value and not sample.name.endswith(("_created", "_bucket")):
                samples.setdefault(sample.name, []).append((sample.labels, sample.value))

    def show(name: str, *labels: str) -> list[Any]:
        rows = sorted(samples.get(name, []), key=lambda row: [row[0][k] for k in labels])
        print(f"{name}:")
        for found, number in rows:
            print(f"  {' '.join(f'{k}={found[k]}' for k in labels):<72} {number:g}")
        return rows

    errors = show("a2a_client_errors_total", "reason", "action", "method")
    show("a2a_client_retries_total", "reason", "method")
    show("a2a_client_retry_budget_exhausted_total", "method", "peer")
    outcomes = show("a2a_client_task_outcomes_total", "skill", "state")
    show("a2a_client_calls_total", "outcome", "give_up", "method")
    show("a2a_client_unknown_outcomes_total", "resolution", "method")

    reasons = {found["reason"] for found, _ in errors}
    assert {
        "TASK_NOT_CANCELABLE",
        "TASK_NOT_FOUND",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        "INTERNAL_ERROR",
        "VERSION_NOT_SUPPORTED",
    } <= reasons, reasons
    assert not [r for r in reasons if r.startswith("TASK_STATE")]  # outcomes are not errors
    assert {found["state"] for found, _ in outcomes} == {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
    }
    assert samples["a2a_client_retry_budget_exhausted_total"], "the budget refused a retry"
    print("ok: errors by reason, task outcomes by skill, each in its own series")


if __name__ == "__main__":
    main()

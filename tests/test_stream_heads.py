"""Streams judged by their head: no event at all, or an error before the first event.

Captured peer shapes (`tests.dialects`): python-a2a's stream holding one
comment line and no event, and a2a-go's HTTP+JSON stream refused before its first event with
``data: {"error": ...}`` (no event name).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from a2a_client_errors import (
    Action,
    AsyncGuardTransport,
    DegradeNeeded,
    Guard,
    GuardTransport,
    Reason,
    ReportNeeded,
    classify,
    normalize,
)
from a2a_client_errors._streaming import aiter_events, iter_events
from a2a_client_errors.testing import FakeClock
from tests.dialects import EMPTY_EVENT_STREAM, a2a_go_rest_stream_error

SSE = {"content-type": "text/event-stream"}
NO_EVENT_BODIES = [
    EMPTY_EVENT_STREAM,
    b"",
    b"\n\n\n",
    b": keep-alive\n\n: keep-alive\n\n",
    b"retry: 3000\n\n",
    b"id: 7\nevent: status\n\n",
    b": SSE stream established\r\n\r\nretry: 10\r\n",
]
IDS = ["python-a2a", "nothing", "blank", "keep-alives", "retry", "no-data", "crlf"]
TASK = {"task": {"id": "t-1", "status": {"state": "TASK_STATE_COMPLETED"}}}
RESULT = f"data: {json.dumps({'jsonrpc': '2.0', 'id': 1, 'result': TASK})}\n\n".encode()
GO_REFUSED = a2a_go_rest_stream_error()


def _sse(body: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, headers=SSE, content=body)


@pytest.mark.parametrize("body", NO_EVENT_BODIES, ids=IDS)
def test_a_stream_without_an_event_is_an_unreadable_answer(body: bytes) -> None:
    """Comments, blank lines, retry and id fields only: report, as an empty body is."""
    for decision in (classify(_sse(body)), classify(_sse(body), operation="SendStreamingMessage")):
        assert (decision.action, decision.reason) == (
            Action.REPORT,
            Reason.INVALID_AGENT_RESPONSE,
        )
        assert decision.error is not None
        assert decision.error.http_status == 200


def test_an_error_status_without_an_event_is_read_by_its_status() -> None:
    """A 503 whose body holds only comments is the 503 (retried), not a broken answer."""
    assert classify(_sse(EMPTY_EVENT_STREAM, 503)).action is Action.RETRY


def test_a_stream_with_a_result_after_comments_is_a_result() -> None:
    """Comments before the first event change nothing."""
    assert classify(_sse(EMPTY_EVENT_STREAM + RESULT)).ok


def test_the_go_rest_stream_refusal_is_read_by_its_error_event() -> None:
    """``data: {"error": Status}`` with no event name: UNSUPPORTED_OPERATION, degrade."""
    decision = classify(_sse(GO_REFUSED), operation="SendStreamingMessage")
    assert (decision.action, decision.reason) == (Action.DEGRADE, Reason.UNSUPPORTED_OPERATION)
    assert normalize(GO_REFUSED) == normalize(json.loads(GO_REFUSED[len(b"data: ") :]))


@pytest.mark.parametrize("body", NO_EVENT_BODIES, ids=IDS)
def test_iter_events_reports_a_stream_without_an_event(body: bytes) -> None:
    """The raw stream readers raise ReportNeeded, not an interruption, for no event at all."""
    client = httpx.Client(transport=httpx.MockTransport(lambda _: _sse(body)))
    with (
        client.stream("POST", "http://agent.example/") as response,
        pytest.raises(ReportNeeded) as failed,
    ):
        list(iter_events(response, operation="SendStreamingMessage"))
    assert failed.value.decision.reason is Reason.INVALID_AGENT_RESPONSE


async def test_aiter_events_reports_a_stream_without_an_event() -> None:
    """The async reader agrees."""
    transport = httpx.MockTransport(lambda _: _sse(EMPTY_EVENT_STREAM))
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", "http://agent.example/") as response,
    ):
        with pytest.raises(ReportNeeded):
            async for _ in aiter_events(response):
                pass


def test_guard_call_reports_a_read_stream_without_an_event() -> None:
    """Guard.call judges a read response the same way: report, after one attempt."""
    calls: list[int] = []

    def call() -> httpx.Response:
        calls.append(1)
        return _sse(EMPTY_EVENT_STREAM)

    with pytest.raises(ReportNeeded):
        Guard(sleep=lambda _: None).call(call, operation="SendStreamingMessage")
    assert len(calls) == 1


class Answers(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An inner transport that answers each request with the next body, as a stream."""

    def __init__(self, *bodies: bytes) -> None:
        self.bodies = list(bodies)
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """The next body, streamed in two chunks (a head read across chunks)."""
        self.requests += 1
        body = self.bodies.pop(0)
        middle = len(body) // 2
        return httpx.Response(200, headers=SSE, stream=_Chunks([body[:middle], body[middle:]]))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The async twin."""
        self.requests += 1
        body = self.bodies.pop(0)
        middle = len(body) // 2
        return httpx.Response(200, headers=SSE, stream=_AsyncChunks([body[:middle], body[middle:]]))


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Any:
        yield from self.chunks


class _AsyncChunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk


def _guard() -> Guard:
    return Guard(sleep=lambda _: None, clock=FakeClock())


def _send_stream() -> dict[str, Any]:
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    return {"message": message}


@pytest.mark.parametrize(
    ("body", "failure", "reason"),
    [
        (EMPTY_EVENT_STREAM, ReportNeeded, Reason.INVALID_AGENT_RESPONSE),
        (GO_REFUSED, DegradeNeeded, Reason.UNSUPPORTED_OPERATION),
    ],
    ids=["no-event", "go-refused"],
)
def test_the_transport_judges_a_stream_by_its_head(
    body: bytes, failure: type[Exception], reason: Reason
) -> None:
    """GuardTransport reads a stream up to its first event: no event, or an error, decides.

    (A subscription: a read, so that nothing is looked up; a send answered so is looked up.)
    """
    inner = Answers(body)
    transport = GuardTransport(_guard(), inner, raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(failure) as failed:
        client.post("http://agent.example/tasks/t-1:subscribe")
    assert failed.value.decision.reason is reason  # type: ignore[attr-defined]
    assert inner.requests == 1


async def test_the_async_transport_judges_a_stream_by_its_head() -> None:
    """AsyncGuardTransport agrees (a2a-go's refusal: degrade, one request)."""
    inner = Answers(GO_REFUSED)
    transport = AsyncGuardTransport(_guard(), inner, raise_failures=True)
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(DegradeNeeded):
            await client.post("http://agent.example/message:stream", json=_send_stream())
    assert inner.requests == 1


def test_a_transparent_transport_hands_the_refused_stream_back_whole() -> None:
    """Without raise_failures the client gets the stream's bytes as they came."""
    inner = Answers(GO_REFUSED)
    with httpx.Client(transport=GuardTransport(_guard(), inner)) as client:
        response = client.post("http://agent.example/message:stream", json=_send_stream())
    assert response.content == GO_REFUSED


def test_a_retryable_error_before_the_first_event_is_retried() -> None:
    """-32603 as the first event of a JSON-RPC subscription: subscribed again."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}}
    inner = Answers(f"data: {json.dumps(error)}\n\n".encode(), RESULT)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "t-1"}}
    with (
        httpx.Client(transport=GuardTransport(_guard(), inner)) as client,
        client.stream("POST", "http://agent.example/", json=body) as response,
    ):
        assert not response.is_stream_consumed
        assert b"".join(response.iter_bytes()) == RESULT
    assert inner.requests == 2


def test_a_stream_of_results_is_handed_on_unread_from_its_first_event() -> None:
    """The first event read, the rest streams through: the client reads every byte."""
    second = RESULT.replace(b"COMPLETED", b"WORKING")
    inner = Answers(EMPTY_EVENT_STREAM + second + RESULT)
    with (
        httpx.Client(transport=GuardTransport(_guard(), inner)) as client,
        client.stream("POST", "http://agent.example/message:stream", json=_send_stream()) as r,
    ):
        assert not r.is_stream_consumed
        assert b"".join(r.iter_bytes()) == EMPTY_EVENT_STREAM + second + RESULT

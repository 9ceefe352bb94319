"""GuardTransport / AsyncGuardTransport and operation_of, against a real HTTP server on 127.0.0.1.

The server (tests/loopback.py) records what it receives, so "the same bytes on every attempt"
is checked where it matters: on the wire. Sleeps go to a fake clock.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import Action, CallFailed, Reason
from a2a_client_errors import _transport as transport_module
from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION
from a2a_client_errors._failures import (
    AlreadySent,
    DeadlineExceeded,
    DegradeNeeded,
    OutcomeUnknown,
    ReconcileNeeded,
    ReportNeeded,
    RetryAfterTooLong,
    RetryExhausted,
)
from a2a_client_errors._guard import Guard
from a2a_client_errors._http_lookup import agent_of
from a2a_client_errors._lookup import ExactlyOnce
from a2a_client_errors._normalize import Limits
from a2a_client_errors._policy import GiveUp, Policy
from a2a_client_errors._reasons import Delivery
from a2a_client_errors._retry import RetryBudget
from a2a_client_errors._transport import AsyncGuardTransport, GuardTransport, operation_of
from a2a_client_errors.journal import SqliteJournal
from a2a_client_errors.testing import FakeClock, RecordingHook, status_error
from tests.loopback import Loopback, Reply, loopback_fixture  # noqa: F401 (the fixture)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

RESULT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"id": "task-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"}},
}
"""A task: an answer to GetTask, and to a send (as 0.3's answered, the task itself)."""
OK = Reply.json(200, RESULT)
UNAVAILABLE = Reply.json(
    503, {"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}}
)
"""The agent's own 503 (a google.rpc.Status): it refused the call, which is resent at once."""
SECRET = "Bearer tok-SECRET-77aa"
BODY_MARKER = "BODY-MARKER-5c3b"


def send_message(
    method: str = "SendMessage", message_id: str | None = "msg-0001"
) -> dict[str, Any]:
    """A JSON-RPC SendMessage request (with a messageId unless it is None)."""
    message: dict[str, Any] = {"role": "ROLE_USER", "parts": [{"text": "hello"}]}
    if message_id is not None:
        message["messageId"] = message_id
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}


def get_task(task_id: str = "task-1") -> dict[str, Any]:
    """A JSON-RPC GetTask request: a read, resent freely whatever became of an attempt."""
    return {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}


def guard_on(clock: FakeClock, **kwargs: Any) -> Guard:
    """A Guard on the fake clock with a deterministic draw."""
    kwargs.setdefault("random", lambda: 0.5)
    return Guard(clock=clock.now, sleep=clock.sleep, **kwargs)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- operation_of -----------------------------------------------------------------------------

JSONRPC_METHODS = [
    # A2A 1.0 method names are the operations themselves.
    ("SendMessage", "SendMessage"),
    ("SendStreamingMessage", "SendStreamingMessage"),
    ("GetTask", "GetTask"),
    ("ListTasks", "ListTasks"),
    ("CancelTask", "CancelTask"),
    ("SubscribeToTask", "SubscribeToTask"),
    ("CreateTaskPushNotificationConfig", "CreateTaskPushNotificationConfig"),
    ("GetTaskPushNotificationConfig", "GetTaskPushNotificationConfig"),
    ("ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    ("DeleteTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"),
    ("GetExtendedAgentCard", "GetExtendedAgentCard"),
    # A2A 0.3 method names.
    ("message/send", "SendMessage"),
    ("message/stream", "SendStreamingMessage"),
    ("tasks/get", "GetTask"),
    ("tasks/list", "ListTasks"),
    ("tasks/cancel", "CancelTask"),
    ("tasks/resubscribe", "SubscribeToTask"),
    ("tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig"),
    ("tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig"),
    ("tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigs"),
    ("tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig"),
    ("agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"),
]


@pytest.mark.parametrize(("method", "operation"), JSONRPC_METHODS)
def test_operation_of_jsonrpc(method: str, operation: str) -> None:
    """A JSON-RPC request's operation is its method (0.3 names mapped to 1.0 ones)."""
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {}}
    request = httpx.Request("POST", "https://agent.test/a2a/jsonrpc", json=body)
    assert operation_of(request) == operation
    assert operation_of(request, body) == operation


# What an agent reads as JSON: whitespace or a byte order mark before the value, a lone
# surrogate escape, invalid UTF-8 in a string (Go's encoding/json reads it as U+FFFD), UTF-16.
LENIENT_BODIES = [
    b"\n" + json.dumps(send_message()).encode(),
    b" \t\r\n " + json.dumps(send_message()).encode(),
    b"\xef\xbb\xbf" + json.dumps(send_message()).encode(),
    json.dumps(send_message()).replace('"hello"', '"\\ud83d"').encode(),
    json.dumps(send_message()).encode().replace(b'"hello"', b'"\xff\xfe"'),
    json.dumps(send_message()).encode("utf-16"),
]


@pytest.mark.parametrize("content", LENIENT_BODIES)
def test_operation_of_a_body_an_agent_reads_as_json(content: bytes) -> None:
    """A send is a send however leniently its JSON is written: never taken for a read."""
    request = httpx.Request("POST", "https://agent.test/a2a", content=content)
    assert operation_of(request) == "SendMessage"


def test_operation_of_a_request_on_bytes_not_read_leaves_it_unread() -> None:
    """A request httpx built on the bytes (a redirect's) is read without being changed."""
    stream = httpx.ByteStream(json.dumps(send_message()).encode())
    request = httpx.Request("POST", "https://agent.test/a2a", stream=stream)
    assert operation_of(request) == "SendMessage"
    with pytest.raises(httpx.RequestNotRead):
        _ = request.content


@pytest.mark.parametrize("content", [b"", b"method=SendMessage", b"{", b"\xef\xbb\xbf"])
def test_operation_of_a_body_no_agent_reads_as_json_is_its_route(content: bytes) -> None:
    """A body that is not JSON to any reader names no method: the route decides (none here)."""
    request = httpx.Request("POST", "https://agent.test/a2a", content=content)
    assert operation_of(request) is None


REST_ROUTES = [
    ("POST", "/message:send", "SendMessage"),
    ("POST", "/message:stream", "SendStreamingMessage"),
    ("GET", "/tasks/task-1", "GetTask"),
    ("GET", "/tasks", "ListTasks"),
    ("POST", "/tasks/task-1:cancel", "CancelTask"),
    ("POST", "/tasks/task-1:subscribe", "SubscribeToTask"),
    ("GET", "/tasks/task-1:subscribe", "SubscribeToTask"),
    ("POST", "/tasks/task-1/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    ("GET", "/tasks/task-1/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    ("GET", "/tasks/task-1/pushNotificationConfigs/cfg-1", "GetTaskPushNotificationConfig"),
    ("DELETE", "/tasks/task-1/pushNotificationConfigs/cfg-1", "DeleteTaskPushNotificationConfig"),
    ("GET", "/extendedAgentCard", "GetExtendedAgentCard"),
]


@pytest.mark.parametrize("prefix", ["", "/acme", "/v1", "/tenants/acme-corp"])
@pytest.mark.parametrize(("method", "path", "operation"), REST_ROUTES)
def test_operation_of_rest(prefix: str, method: str, path: str, operation: str) -> None:
    """An HTTP+JSON request's operation comes from its route, under any tenant prefix."""
    request = httpx.Request(method, f"https://agent.test{prefix}{path}?pageSize=2")
    assert operation_of(request) == operation


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("GET", "/tasks/tasks-42", "GetTask"),
        ("POST", "/tasks/tasks-42:cancel", "CancelTask"),
        ("GET", "/tasks/t-1/pushNotificationConfigs/tasks-cfg", "GetTaskPushNotificationConfig"),
        (
            "DELETE",
            "/tasks/t-1/pushNotificationConfigs/tasks-cfg",
            "DeleteTaskPushNotificationConfig",
        ),
    ],
)
def test_operation_of_rest_ids_that_look_like_routes(
    method: str, path: str, operation: str
) -> None:
    """Task and config ids that start with "tasks" do not confuse the route."""
    assert operation_of(httpx.Request(method, f"https://agent.test{path}")) == operation


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/healthz"),
        ("GET", "/.well-known/agent-card.json"),
        ("POST", "/tasks"),
        ("GET", "/"),
        ("PUT", "/tasks/task-1"),
    ],
)
def test_operation_of_other_routes_is_none(method: str, path: str) -> None:
    """A request that is no A2A operation has none."""
    assert operation_of(httpx.Request(method, f"https://agent.test{path}")) is None


# --- the same request on every attempt, on the wire -------------------------------------------


def test_sync_transport_resends_identical_bytes(loopback: Loopback) -> None:
    """503, 503, 200 through httpx.Client: three identical requests, the 200 handed back."""
    loopback.script([UNAVAILABLE, UNAVAILABLE, OK])
    clock = FakeClock()
    transport = GuardTransport(guard_on(clock))
    with httpx.Client(transport=transport, base_url=loopback.url) as client:
        response = client.post("/a2a", json=send_message(), headers={"Authorization": SECRET})
    assert response.status_code == 200
    assert response.json() == RESULT
    _check_identical(loopback, 3)
    assert clock.sleeps == [0.25, 0.5]


async def test_async_transport_resends_identical_bytes(loopback: Loopback) -> None:
    """503, 503, 200 through httpx.AsyncClient: three identical requests, same messageId."""
    loopback.script([UNAVAILABLE, UNAVAILABLE, OK])
    clock = FakeClock()
    transport = AsyncGuardTransport(guard_on(clock))
    async with httpx.AsyncClient(transport=transport, base_url=loopback.url) as client:
        response = await client.post("/a2a", json=send_message(), headers={"Authorization": SECRET})
    assert response.status_code == 200
    assert response.json() == RESULT
    _check_identical(loopback, 3)


def _check_identical(loopback: Loopback, count: int) -> None:
    requests = loopback.requests
    assert len(requests) == count
    first = requests[0]
    assert first.json()["params"]["message"]["messageId"] == "msg-0001"
    for request in requests:
        assert request.method == first.method
        assert request.path == first.path
        assert request.body == first.body
        assert request.json()["params"]["message"]["messageId"] == "msg-0001"
        assert request.header("authorization") == SECRET
        assert request.header("content-length") == str(len(first.body))


def test_rest_send_message_resends_identical_bytes(loopback: Loopback) -> None:
    """POST /message:send with a messageId is retried with the same bytes."""
    loopback.script([UNAVAILABLE, OK])
    body = {"message": {"messageId": "rest-1", "role": "ROLE_USER", "parts": [{"text": "x"}]}}
    with httpx.Client(transport=GuardTransport(guard_on(FakeClock()))) as client:
        response = client.post(f"{loopback.url}/acme/message:send", json=body)
    assert response.status_code == 200
    bodies = [r.body for r in loopback.requests]
    assert len(bodies) == 2
    assert bodies[0] == bodies[1]
    assert json.loads(bodies[0]) == body


@pytest.mark.parametrize("hint", [{}, {"Retry-After": "1"}], ids=["no-hint", "retry-after"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_agents_own_503_twice_then_ok_resends_the_send_without_a_look(
    mode: str, hint: dict[str, str]
) -> None:
    """A google.rpc.Status UNAVAILABLE on 503, twice: the same bytes go again, nothing looked up."""
    busy = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}}
    task = {"id": "task-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"}}
    done = {"jsonrpc": "2.0", "id": 1, "result": {"task": task}}
    answers = iter([httpx.Response(503, json=busy, headers=hint)] * 2)
    sent: list[bytes] = []

    def agent(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return next(answers, httpx.Response(200, json=done))

    clock, hook = FakeClock(), RecordingHook()
    guard = guard_on(clock, hooks=[hook])
    if mode == "sync":
        with httpx.Client(transport=GuardTransport(guard, httpx.MockTransport(agent))) as client:
            response = client.post("http://agent/", json=send_message())
    else:
        transport = AsyncGuardTransport(guard, httpx.MockTransport(agent))
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.post("http://agent/", json=send_message())

    assert response.json() == done
    assert len(sent) == 3
    assert len(set(sent)) == 1  # the identical bytes each time
    assert {json.loads(body)["method"] for body in sent} == {"SendMessage"}  # no ListTasks
    assert hook.actions == ["retry", "retry", "ok"]
    assert [e.decision.delivery for e in hook.decisions[:2]] == [Delivery.NOT_PROCESSED] * 2
    assert hook.resolutions == []


def test_retry_after_from_the_wire_floors_the_sleep(loopback: Loopback) -> None:
    """A real 503 with Retry-After: 3 is retried after a sleep of at least 3 s."""
    loopback.script([Reply(503, b"", {"Retry-After": "3"}), OK])
    clock = FakeClock()
    with httpx.Client(transport=GuardTransport(guard_on(clock))) as client:
        response = client.get(f"{loopback.url}/tasks/t-1")
    assert response.status_code == 200
    assert clock.sleeps == [3.0]
    assert len(loopback.requests) == 2


# --- what is classified -----------------------------------------------------------------------


def test_jsonrpc_error_on_http_200_is_retried(loopback: Loopback) -> None:
    """A JSON-RPC -32603 body on HTTP 200 from a real server is classified and retried."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal"}}
    loopback.script([Reply.json(200, error), OK])
    with httpx.Client(transport=GuardTransport(guard_on(FakeClock()))) as client:
        response = client.post(loopback.url, json=get_task())
    assert len(loopback.requests) == 2
    assert response.json() == RESULT


async def test_async_jsonrpc_error_on_http_200_is_retried(loopback: Loopback) -> None:
    """The async transport classifies a JSON-RPC -32603 on HTTP 200 from a real server too."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal"}}
    loopback.script([Reply.json(200, error), OK])
    async with httpx.AsyncClient(transport=AsyncGuardTransport(guard_on(FakeClock()))) as c:
        response = await c.post(loopback.url, json=get_task())
    assert len(loopback.requests) == 2
    assert response.json() == RESULT


def test_jsonrpc_reason_on_http_200_reaches_the_decision(loopback: Loopback) -> None:
    """A TASK_NOT_FOUND JSON-RPC error on HTTP 200 ends as ReconcileNeeded (raise_failures)."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}
    loopback.script([Reply.json(200, error)])
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-9"}}
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(ReconcileNeeded) as caught:
        client.post(loopback.url, json=body)
    assert caught.value.decision.operation == "GetTask"
    assert caught.value.reason is Reason.TASK_NOT_FOUND


def test_rest_error_body_reaches_the_decision(loopback: Loopback) -> None:
    """An HTTP+JSON 400 whose ErrorInfo says UNSUPPORTED_OPERATION is a degrade, not a bare 400."""
    status, body = status_error(Reason.UNSUPPORTED_OPERATION)
    loopback.script([Reply.json(status, body)])
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(DegradeNeeded) as caught:
        client.get(f"{loopback.url}/tasks/t-1:subscribe")
    assert caught.value.reason is Reason.UNSUPPORTED_OPERATION


def test_rest_report_reason_on_500_is_not_retried(loopback: Loopback) -> None:
    """A 500 whose ErrorInfo says INVALID_AGENT_RESPONSE is reported after one attempt."""
    status, body = status_error(Reason.INVALID_AGENT_RESPONSE)
    loopback.script([Reply.json(status, body)])
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(ReportNeeded):
        client.get(f"{loopback.url}/tasks/t-1")
    assert len(loopback.requests) == 1


def test_mock_inner_transport_classifies_jsonrpc_errors_on_200() -> None:
    """With an in-memory inner transport a JSON-RPC -32603 on 200 is retried, same bytes."""
    seen: list[bytes] = []
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal"}}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, json=error if len(seen) == 1 else RESULT)

    inner = httpx.MockTransport(handler)
    with httpx.Client(transport=GuardTransport(guard_on(FakeClock()), inner=inner)) as client:
        response = client.post("https://agent.test/", json=get_task())
    assert response.json() == RESULT
    assert len(seen) == 2
    assert seen[0] == seen[1]


# --- what is never retried --------------------------------------------------------------------


def test_generator_body_is_sent_once(loopback: Loopback) -> None:
    """A body from a generator cannot be replayed: one attempt, the 503 handed back."""
    loopback.script([UNAVAILABLE, OK])
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}})

    def chunks() -> Iterator[bytes]:
        yield payload[:10].encode()
        yield payload[10:].encode()

    clock = FakeClock()
    with httpx.Client(transport=GuardTransport(guard_on(clock))) as client:
        response = client.post(loopback.url, content=chunks())
    assert response.status_code == 503
    assert len(loopback.requests) == 1
    assert loopback.requests[0].body == payload.encode()
    assert clock.sleeps == []


def test_iterator_body_is_sent_once_and_says_why(loopback: Loopback) -> None:
    """An iterator body: one attempt; with raise_failures the give-up is NOT_REPLAYABLE."""
    loopback.script([UNAVAILABLE, OK])
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(RetryExhausted) as caught:
        client.post(f"{loopback.url}/tasks/t-1:cancel", content=iter([b"{}"]))
    assert caught.value.decision.give_up is GiveUp.NOT_REPLAYABLE
    assert caught.value.decision.operation == "CancelTask"
    assert len(loopback.requests) == 1


async def test_async_generator_body_is_sent_once(loopback: Loopback) -> None:
    """An async generator body through AsyncGuardTransport: one attempt."""
    loopback.script([UNAVAILABLE, OK])

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc": "2.0", "id": 1, '
        yield b'"method": "GetTask", "params": {}}'

    async with httpx.AsyncClient(transport=AsyncGuardTransport(guard_on(FakeClock()))) as c:
        response = await c.post(loopback.url, content=chunks())
    assert response.status_code == 503
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("method", ["SendMessage", "message/send", "SendStreamingMessage"])
def test_jsonrpc_send_without_message_id_is_sent_once(loopback: Loopback, method: str) -> None:
    """A SendMessage whose message has no messageId is never resent."""
    loopback.script([UNAVAILABLE, OK])
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(RetryExhausted) as caught:
        client.post(loopback.url, json=send_message(method, message_id=None))
    assert caught.value.decision.give_up is GiveUp.NO_MESSAGE_ID
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("path", ["/message:send", "/acme/message:send", "/v1/message:send"])
def test_rest_send_without_message_id_is_sent_once(loopback: Loopback, path: str) -> None:
    """POST /message:send (any tenant) without a messageId is sent once; the 503 handed back."""
    loopback.script([UNAVAILABLE, OK])
    body = {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}
    with httpx.Client(transport=GuardTransport(guard_on(FakeClock()))) as client:
        response = client.post(f"{loopback.url}{path}", json=body)
    assert response.status_code == 503
    assert len(loopback.requests) == 1


async def test_async_send_without_message_id_is_sent_once(loopback: Loopback) -> None:
    """The async transport refuses to resend a message/send without a messageId too."""
    loopback.script([UNAVAILABLE, OK])
    async with httpx.AsyncClient(transport=AsyncGuardTransport(guard_on(FakeClock()))) as c:
        response = await c.post(loopback.url, json=send_message("message/send", None))
    assert response.status_code == 503
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("method", ["SendMessage", "message/send"])
def test_send_with_message_id_is_retried(loopback: Loopback, method: str) -> None:
    """A SendMessage with a messageId is retried."""
    loopback.script([UNAVAILABLE, OK])
    with httpx.Client(transport=GuardTransport(guard_on(FakeClock()))) as client:
        response = client.post(loopback.url, json=send_message(method))
    assert response.status_code == 200
    assert len(loopback.requests) == 2


# --- streams, failures, hooks -----------------------------------------------------------------


def test_sse_200_is_passed_through_unread(loopback: Loopback) -> None:
    """A 200 text/event-stream reaches the client unread, and its events can still be read."""
    loopback.script([Reply.sse({"kind": "status-update"}, {"kind": "artifact-update"})])
    with (
        httpx.Client(transport=GuardTransport(guard_on(FakeClock()))) as client,
        client.stream("POST", loopback.url, json=send_message("SendStreamingMessage")) as response,
    ):
        assert response.status_code == 200
        assert not response.is_stream_consumed
        lines = [line for line in response.iter_lines() if line]
    assert lines == ['data: {"kind": "status-update"}', 'data: {"kind": "artifact-update"}']
    assert len(loopback.requests) == 1


async def test_async_sse_200_is_passed_through_unread(loopback: Loopback) -> None:
    """The async transport passes a 200 event stream through unread too."""
    loopback.script([Reply.sse({"kind": "status-update"})])
    transport = AsyncGuardTransport(guard_on(FakeClock()))
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", loopback.url, json=send_message("message/stream")) as response,
    ):
        assert not response.is_stream_consumed
        lines = [line async for line in response.aiter_lines() if line]
    assert lines == ['data: {"kind": "status-update"}']


def test_final_response_is_handed_back_by_default(loopback: Loopback) -> None:
    """After the last attempt the client gets the last 503 itself, body intact."""
    loopback.script([Reply(503, b"upstream unavailable", {"content-type": "text/plain"})])
    with httpx.Client(transport=GuardTransport(guard_on(FakeClock()))) as client:
        response = client.get(f"{loopback.url}/tasks/t-1")
    assert response.status_code == 503
    assert response.text == "upstream unavailable"
    assert len(loopback.requests) == 3
    with pytest.raises(httpx.HTTPStatusError):
        response.raise_for_status()


def test_raise_failures_raises_the_call_failed(loopback: Loopback) -> None:
    """raise_failures=True raises RetryExhausted carrying the last response and the operation."""
    loopback.script([UNAVAILABLE])
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(RetryExhausted) as caught:
        client.get(f"{loopback.url}/acme/tasks/t-1")
    failure = caught.value
    assert failure.attempts == 3
    assert isinstance(failure.result, httpx.Response)
    assert failure.result.status_code == 503
    assert failure.decision.operation == "GetTask"
    assert failure.decision.action is Action.RETRY


def test_connect_error_is_reraised_after_retries() -> None:
    """A port nobody listens on: retried, then the client sees httpx.ConnectError itself."""
    clock = FakeClock()
    url = f"http://127.0.0.1:{_closed_port()}/tasks/t-1"
    with (
        httpx.Client(transport=GuardTransport(guard_on(clock))) as client,
        pytest.raises(httpx.ConnectError),
    ):
        client.get(url)
    assert clock.sleeps == [0.25, 0.5]


def test_connect_error_with_raise_failures_is_chained() -> None:
    """raise_failures=True: RetryExhausted whose __cause__ is the ConnectError."""
    transport = GuardTransport(guard_on(FakeClock()), raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(CallFailed) as caught:
        client.get(f"http://127.0.0.1:{_closed_port()}/tasks/t-1")
    assert type(caught.value) is RetryExhausted
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert caught.value.attempts == 3


async def test_async_raise_failures(loopback: Loopback) -> None:
    """The async transport raises the CallFailed too when asked to."""
    loopback.script([UNAVAILABLE])
    transport = AsyncGuardTransport(guard_on(FakeClock()), raise_failures=True)
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(RetryExhausted):
            await client.get(f"{loopback.url}/tasks/t-1")
    assert len(loopback.requests) == 3


def test_transport_events_carry_no_credentials_or_body(loopback: Loopback) -> None:
    """Hooks on the transport never see the Authorization header or the request body."""
    loopback.script([UNAVAILABLE, Reply(401), OK])
    recorder = RecordingHook()
    transport = GuardTransport(guard_on(FakeClock(), hooks=[recorder]))
    body = send_message()
    body["params"]["message"]["parts"] = [{"text": BODY_MARKER}]
    with httpx.Client(transport=transport) as client:
        client.post(loopback.url, json=body, headers={"Authorization": SECRET})
    assert len(recorder.events) >= 3
    for _, event in recorder.events:
        text = repr(event) + str(event.decision)
        assert "tok-SECRET" not in text
        assert BODY_MARKER not in text
        assert event.operation == "SendMessage"


def test_budgets_are_per_peer_url(loopback: Loopback) -> None:
    """The transport keys budgets by scheme://host:port."""
    loopback.script([UNAVAILABLE, OK])
    guard = guard_on(FakeClock())
    with httpx.Client(transport=GuardTransport(guard)) as client:
        client.get(f"{loopback.url}/tasks/t-1")
    port = loopback.url.rsplit(":", 1)[1]
    assert guard.budgets.peers() == [f"http://127.0.0.1:{port}"]  # type: ignore[union-attr]


async def test_budget_caps_attempts_of_concurrent_requests(loopback: Loopback) -> None:
    """100 concurrent requests to a server that always 503s: exactly 100 + capacity arrive."""
    loopback.script([UNAVAILABLE])
    capacity = 10
    clock = FakeClock()
    guard = guard_on(clock, budget=RetryBudget(capacity=capacity))
    # A small pool keeps the server's thread count down; the 100 calls still interleave.
    inner = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=8))
    transport = AsyncGuardTransport(guard, inner=inner, raise_failures=True)
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        results = await asyncio.gather(
            *(client.get(f"{loopback.url}/tasks/t-{i}") for i in range(100)),
            return_exceptions=True,
        )
    assert all(isinstance(r, RetryExhausted) for r in results)
    assert len(loopback.requests) == 100 + capacity
    assert len(clock.sleeps) == capacity


def test_close_closes_the_inner_transport() -> None:
    """Closing the client closes the inner transport."""
    closed: list[bool] = []

    class Inner(httpx.MockTransport):
        """A mock transport that notes its closing."""

        def close(self) -> None:
            """Note it."""
            closed.append(True)

    inner = Inner(lambda request: httpx.Response(200, json=RESULT))
    with httpx.Client(transport=GuardTransport(Guard(), inner=inner)) as client:
        assert client.get("https://agent.test/tasks/t-1").json() == RESULT
    assert closed == [True]


def test_a_compressed_response_is_judged_and_handed_over_decoded() -> None:
    """A gzip-encoded JSON-RPC error is judged on its decoded body; the client reads it once."""
    body = gzip.compress(
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}
        ).encode()
    )
    sent: list[int] = []

    def peer(request: httpx.Request) -> httpx.Response:
        sent.append(1)
        return httpx.Response(200, headers={"content-encoding": "gzip"}, content=body)

    guard = Guard(sleep=lambda _: None)
    with httpx.Client(transport=GuardTransport(guard, inner=httpx.MockTransport(peer))) as client:
        response = client.post("http://agent.example/", json={"jsonrpc": "2.0", "id": 1})
    assert response.json()["error"]["code"] == -32001
    assert len(sent) == 1  # TASK_NOT_FOUND is reconcile: judged, not retried


def test_each_attempt_gets_no_more_than_the_time_left() -> None:
    """With a deadline, every attempt's timeouts shrink to the time left; shorter ones stay."""
    clock = FakeClock()
    seen: list[dict[str, float]] = []

    def peer(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.extensions["timeout"]))
        clock.advance(4.0)  # each attempt takes 4 s of the 10 s deadline
        return httpx.Response(503)

    guard = Guard(deadline=10.0, clock=clock.now, sleep=clock.sleep, random=lambda: 0.0)
    transport = GuardTransport(guard, inner=httpx.MockTransport(peer))
    with httpx.Client(transport=transport, timeout=httpx.Timeout(30.0, connect=2.0)) as client:
        response = client.get("http://agent.example/tasks/t-1")
    assert response.status_code == 503
    assert seen[0] == {"connect": 2.0, "read": 10.0, "write": 10.0, "pool": 10.0}
    assert seen[1] == {"connect": 2.0, "read": 6.0, "write": 6.0, "pool": 6.0}
    assert seen[2] == {"connect": 2.0, "read": 2.0, "write": 2.0, "pool": 2.0}


# --- the unwatched success path ----------------------------------------------------------------


def _answers(*bodies: tuple[int, bytes]) -> tuple[httpx.MockTransport, list[int]]:
    """A wire that answers ``bodies`` in turn (the last one repeats); counts the requests."""
    sent: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(1)
        status, content = bodies[min(len(sent), len(bodies)) - 1]
        return httpx.Response(status, content=content)

    return httpx.MockTransport(answer), sent


ESCAPED_ERROR = b'{"jsonrpc": "2.0", "id": 1, "\\u0065rror": {"code": -32603, "message": "x"}}'


@pytest.mark.parametrize(
    "first",
    [
        json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}).encode(),
        ESCAPED_ERROR,  # the key spelled with an escape: still read, still retried
    ],
)
def test_an_unwatched_transport_still_retries_an_error_on_200(first: bytes) -> None:
    """No hooks, transparent: a JSON-RPC error on HTTP 200 is found, however it is spelled."""
    wire, sent = _answers((200, first), (200, json.dumps(RESULT).encode()))
    guard = guard_on(FakeClock())
    with httpx.Client(transport=GuardTransport(guard, inner=wire)) as client:
        answer = client.post("http://agent/", json=get_task())
    assert answer.json() == RESULT
    assert len(sent) == 2


def test_an_unwatched_transport_hands_back_a_broken_success_as_it_came() -> None:
    """No hooks, transparent: a 200 that is not JSON is handed back, as a judged one would be."""
    wire, sent = _answers((200, b"<html>not json</html>"))
    guard = guard_on(FakeClock())
    with httpx.Client(transport=GuardTransport(guard, inner=wire)) as client:
        answer = client.post("http://agent/", json=get_task())
    assert (answer.status_code, answer.text, len(sent)) == (200, "<html>not json</html>", 1)


@pytest.mark.parametrize("hooks", [0, 1], ids=["unwatched", "watched"])
def test_a_broken_answer_to_a_send_is_looked_up_with_or_without_hooks(hooks: int) -> None:
    """A send's broken 200 says nothing of its task: looked up, hooks or not.

    A hook never changes what happens; the task found is the answer.
    """
    agent = LosingAgent("ok")

    def broken(request: httpx.Request) -> httpx.Response:
        answer = agent(request)
        if json.loads(request.content)["method"] == "SendMessage":
            return httpx.Response(200, content=answer.content[:45])
        return answer

    recorder = RecordingHook()
    guard = guard_on(FakeClock(), hooks=[recorder] * hooks)
    with httpx.Client(transport=GuardTransport(guard, inner=httpx.MockTransport(broken))) as c:
        answer = c.post("http://agent/a2a", json=send_message())
    assert answer.json()["result"]["task"] == agent.tasks[0]
    assert (len(agent.sends), len(agent.tasks)) == (1, 1)
    assert json.loads(agent.requests[1].content)["method"] == "ListTasks"


def test_a_watched_or_raising_transport_judges_every_success_in_full() -> None:
    """Hooks, or raise_failures: the broken 200 is INVALID_AGENT_RESPONSE, seen and raised."""
    wire, _ = _answers((200, b"<html>not json</html>"))
    recorder = RecordingHook()
    watched = GuardTransport(guard_on(FakeClock(), hooks=[recorder]), inner=wire)
    with httpx.Client(transport=watched) as client:
        client.post("http://agent/", json=send_message())
    assert recorder.decisions[0].decision.reason is Reason.INVALID_AGENT_RESPONSE
    raising = GuardTransport(guard_on(FakeClock()), inner=wire, raise_failures=True)
    with httpx.Client(transport=raising) as client, pytest.raises(ReportNeeded):
        client.post("http://agent/", json=send_message())


async def test_an_unwatched_async_transport_still_retries_an_error_on_200() -> None:
    """The async door takes the same path."""
    wire, sent = _answers((200, ESCAPED_ERROR), (200, json.dumps(RESULT).encode()))
    transport = AsyncGuardTransport(guard_on(FakeClock()), inner=wire)
    async with httpx.AsyncClient(transport=transport) as client:
        answer = await client.post("http://agent/", json=get_task())
    assert answer.json() == RESULT
    assert len(sent) == 2


async def test_an_unwatched_async_transport_passes_a_plain_success_with_its_credit() -> None:
    """A plain 2xx goes straight back; the peer's budget is credited as for any success."""
    wire, sent = _answers((200, json.dumps(RESULT).encode()))
    budget = RetryBudget(capacity=4)
    budget.try_spend()
    transport = AsyncGuardTransport(guard_on(FakeClock(), budget=budget), inner=wire)
    async with httpx.AsyncClient(transport=transport) as client:
        answer = await client.post("http://agent/", json=send_message())
    assert (answer.json(), len(sent)) == (RESULT, 1)
    assert budget.tokens == 3.5  # 4, one retry's cost spent above, half a token back


async def test_an_async_transport_yields_to_the_loop_before_every_retry() -> None:
    """A wire that never suspends and a no-op sleep: another task runs between the attempts."""
    turns: list[int] = []  # one entry per turn of the observer
    ticks: list[int] = []  # the observer's turns when each attempt started

    def answer(request: httpx.Request) -> httpx.Response:
        ticks.append(len(turns))
        return httpx.Response(503) if len(ticks) < 3 else httpx.Response(200, json=RESULT)

    transport = AsyncGuardTransport(guard_on(FakeClock()), inner=httpx.MockTransport(answer))
    async with httpx.AsyncClient(transport=transport) as client:
        call = asyncio.ensure_future(client.post("http://agent/", json=get_task()))
        while not call.done():
            turns.append(1)
            await asyncio.sleep(0)
    assert call.result().json() == RESULT
    assert len(ticks) == 3
    assert ticks[0] < ticks[1] < ticks[2]


def test_the_deadline_counts_from_the_first_attempt_on_the_unwatched_path() -> None:
    """The first attempt, taken before the retry loop starts, still counts against the deadline."""
    clock = FakeClock()
    starts: list[float] = []

    def slow_503(request: httpx.Request) -> httpx.Response:
        starts.append(clock.now())
        clock.advance(4.0)  # each attempt takes 4 s on the fake clock
        return httpx.Response(503, headers={"Retry-After": "0"})  # refused: resent at once

    guard = guard_on(clock, deadline=10.0, max_attempts=5)
    transport = GuardTransport(guard, inner=httpx.MockTransport(slow_503), raise_failures=False)
    with httpx.Client(transport=transport) as client:
        answer = client.post("http://agent/", json=send_message())
    assert answer.status_code == 503
    # Attempts start at 0, 4.25 and 8.75 s (draws of half the backoff); a fourth would start
    # at 13.75 s, past the deadline counted from 0 (it would fit one counted from 4 s).
    assert starts == [0.0, 4.25, 8.75]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "content",
    [json.dumps(send_message()).encode(), b'{"not": json', b"plain text"],
    ids=["send", "broken JSON", "not JSON"],
)
@pytest.mark.parametrize(
    "setup",
    [(False, None, False), (False, 10.0, False), (True, 10.0, False), (True, None, True)],
    ids=["plain", "deadline", "journal+deadline", "journal+hooks"],
)
def test_a_request_body_is_parsed_at_most_once_per_call(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    mode: str,
    content: bytes,
    setup: tuple[bool, float | None, bool],
) -> None:
    """The deadline's share, the journal's entry, the shape and the record read one parse.

    The first answer is a 503, so the whole call is made (shape, retry, record); a body that
    parses to nothing (broken JSON, not JSON) is not parsed again by each of them.
    """
    journaled, deadline, watched = setup  # a journal, a deadline, hooks
    parses: list[bytes] = []
    real = transport_module.request_json

    def counting(raw: bytes) -> Any:
        parses.append(raw)
        return real(raw)

    monkeypatch.setattr(transport_module, "request_json", counting)
    clock = FakeClock()
    journal = SqliteJournal(tmp_path / "sends.db", clock=clock.now) if journaled else None
    answers = [httpx.Response(503, headers={"Retry-After": "0"}), httpx.Response(200, json=RESULT)]

    def answer(request: httpx.Request) -> httpx.Response:
        return answers.pop(0) if len(answers) > 1 else answers[0]

    guard = guard_on(
        clock,
        deadline=deadline,
        journal=journal,
        hooks=[RecordingHook()] if watched else [],
    )
    wire = httpx.MockTransport(answer)
    request = httpx.Request("POST", "http://agent/", content=content)
    if mode == "sync":
        response = GuardTransport(guard, inner=wire).handle_request(request)
    else:
        response = asyncio.run(AsyncGuardTransport(guard, inner=wire).handle_async_request(request))
    record = response.extensions["a2a_call"]
    operation = record.operation
    assert response.status_code == 200
    assert operation == ("SendMessage" if content.startswith(b'{"json') else None)
    assert parses == [content]
    if journal is not None:
        journal.close()


def _an_hour_later() -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A wire whose every answer is a real 503 asking for an hour (Retry-After: 3600)."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(503, headers={"Retry-After": "3600"})

    return httpx.MockTransport(answer), sent


@pytest.mark.parametrize("body", [send_message(), get_task()], ids=["SendMessage", "GetTask"])
@pytest.mark.parametrize("deadline", [None, 10.0])
def test_a_retry_after_past_the_cap_raises_retry_after_too_long(
    body: dict[str, Any], deadline: float | None
) -> None:
    """An hour's Retry-After (the cap is 60 s): one attempt, nothing slept, its own give-up."""
    wire, sent = _an_hour_later()
    clock = FakeClock()
    transport = GuardTransport(guard_on(clock, deadline=deadline), inner=wire, raise_failures=True)
    with httpx.Client(transport=transport) as client, pytest.raises(RetryAfterTooLong) as caught:
        client.post("http://agent/", json=body)
    failure = caught.value
    assert not isinstance(failure, DeadlineExceeded)
    assert failure.decision.give_up is GiveUp.HINT_TOO_LONG
    assert failure.retry_after == 3600.0
    assert failure.decision.operation == body["method"]
    assert isinstance(failure.result, httpx.Response)
    assert failure.result.status_code == 503
    assert (failure.attempts, len(sent), clock.sleeps, clock.now()) == (1, 1, [], 0.0)


def test_a_retry_after_past_the_cap_hands_back_the_503_by_default() -> None:
    """Without raise_failures the client gets the 503 itself, at once, sent once."""
    wire, sent = _an_hour_later()
    clock = FakeClock()
    with httpx.Client(transport=GuardTransport(guard_on(clock), inner=wire)) as client:
        answer = client.post("http://agent/", json=send_message())
    assert (answer.status_code, answer.headers["Retry-After"]) == (503, "3600")
    assert (len(sent), clock.sleeps) == (1, [])


async def test_an_async_retry_after_past_the_cap_raises_retry_after_too_long() -> None:
    """The async door gives up the same way, without sleeping."""
    wire, sent = _an_hour_later()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    guard = Guard(clock=FakeClock().now, sleep=sleep, random=lambda: 0.5)
    transport = AsyncGuardTransport(guard, inner=wire, raise_failures=True)
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(RetryAfterTooLong) as caught:
            await client.post("http://agent/", json=send_message())
    assert caught.value.decision.give_up is GiveUp.HINT_TOO_LONG
    assert caught.value.retry_after == 3600.0
    assert (caught.value.attempts, len(sent), slept) == (1, 1, [])


# --- unknown outcomes of a send: the look-up through the inner transport -------------------------


class LosingAgent:
    """An in-memory agent behind a MockTransport that can lose a send's answer.

    A send either makes its task and then loses the answer (``"lose"``), loses the request
    before making anything (``"drop"``), or answers (``"ok"``), by ``plan`` (the last repeats).
    Look-ups (ListTasks, GetTask, subscriptions) are answered from the tasks it made.
    """

    def __init__(
        self, *plan: str, state: str = "TASK_STATE_COMPLETED", subscribe: str = "stream"
    ) -> None:
        self.plan = list(plan)
        self.state = state
        self.subscribe = subscribe
        self.tasks: list[dict[str, Any]] = []
        self.requests: list[httpx.Request] = []
        self.sends: list[bytes] = []
        self.card: dict[str, Any] | None = None  # served at the well-known path, when set
        self.card_reads: list[httpx.Request] = []
        # The deduplication mark its answers carry (an agent behind `deduplicate`), if any.
        self.mark: dict[str, Any] | None = None

    def _step(self) -> str:
        return self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]

    def _task(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": message.get("taskId", f"task-{len(self.tasks) + 1}"),
            "contextId": message.get("contextId", "ctx-new"),
            "status": {"state": self.state},
            "history": [message],
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """Answer one request (the agent card's reads are kept apart)."""
        if request.url.path.endswith("/.well-known/agent-card.json"):
            self.card_reads.append(request)
            return httpx.Response(404) if self.card is None else httpx.Response(200, json=self.card)
        self.requests.append(request)
        body: Any = json.loads(request.content) if request.content else None
        rpc = isinstance(body, dict) and "method" in body
        method = body["method"] if rpc else None
        path = request.url.path
        if (
            isinstance(body, list)
            or method
            in (
                "SendMessage",
                "SendStreamingMessage",
                "message/send",
            )
            or path.endswith(("message:send", "message:stream"))
        ):
            return self._send(request, body)
        if method in ("ListTasks", "tasks/list") or (
            request.method == "GET" and path.endswith("/tasks")
        ):
            page = {"tasks": self.tasks, "nextPageToken": ""}
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": page} if rpc else page
            )
        if method == "GetTask" or (request.method == "GET" and "/tasks/" in path):
            task_id = body["params"]["id"] if rpc else path.rsplit("/", 1)[-1]
            found = [t for t in self.tasks if t["id"] == task_id]
            if not found:
                error = {
                    "jsonrpc": "2.0",
                    "id": body["id"],
                    "error": {"code": -32001, "message": "no"},
                }
                return httpx.Response(200, json=error)
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": found[0]}
            )
        if method == "SubscribeToTask" or path.endswith(":subscribe"):
            if self.subscribe == "fail":
                raise httpx.ConnectError("refused", request=request)
            if self.subscribe == "refuse":
                return httpx.Response(404, text="no")
            event = {
                "statusUpdate": {"taskId": "task-1", "status": {"state": "TASK_STATE_COMPLETED"}}
            }
            payload = {"jsonrpc": "2.0", "id": body["id"], "result": event} if rpc else event
            return httpx.Response(
                200,
                content=b"data: " + json.dumps(payload).encode() + b"\n\n",
                headers={"content-type": "text/event-stream"},
            )
        return httpx.Response(404, text="no such route")

    def _send(self, request: httpx.Request, body: Any) -> httpx.Response:
        self.sends.append(request.content)
        step = self._step()
        if step == "drop":
            raise httpx.ReadError("connection reset", request=request)
        items = body if isinstance(body, list) else [body]
        for item in items:
            params = item.get("params", item) if isinstance(item, dict) else {}
            if isinstance(params, dict) and isinstance(params.get("message"), dict):
                self.tasks.append(self._task(params["message"]))
        if step == "lose":
            raise httpx.ReadError("connection reset after the request", request=request)
        if isinstance(body, list):
            return httpx.Response(200, json=[{"jsonrpc": "2.0", "id": 1, "result": {}}])
        task = self.tasks[-1]
        if self.mark is not None:
            task = {**task, "metadata": {DEDUPLICATE_EXTENSION: self.mark}}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"task": task}})


def lookup_guard(clock: FakeClock, **kwargs: Any) -> Guard:
    """A Guard for the look-up tests (fake clock, the default ExactlyOnce)."""
    return guard_on(clock, **kwargs)


def _post(
    mode: str, transport_of: Any, url: str, body: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    """POST ``body`` through a sync or async client on the transport ``transport_of`` builds."""
    headers = {"Authorization": SECRET, **(headers or {})}
    if mode == "sync":
        with httpx.Client(transport=transport_of("sync")) as client:
            return client.post(url, json=body, headers=headers)

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport_of("async")) as client:
            return await client.post(url, json=body, headers=headers)

    return asyncio.run(go())


def _transport(agent: LosingAgent, guard: Guard, **kwargs: Any) -> Any:
    inner = httpx.MockTransport(agent)

    def make(mode: str) -> httpx.BaseTransport | httpx.AsyncBaseTransport:
        if mode == "sync":
            return GuardTransport(guard, inner=inner, **kwargs)
        return AsyncGuardTransport(guard, inner=inner, **kwargs)

    return make


LOOKUP_MODES = pytest.mark.parametrize("mode", ["sync", "async"])


@LOOKUP_MODES
def test_lost_jsonrpc_answer_is_found_by_list_tasks(mode: str) -> None:
    """A ReadError on SendMessage: ListTasks (same URL, same credentials) finds the task."""
    agent = LosingAgent("lose")
    guard = lookup_guard(FakeClock())
    body = send_message()
    body["params"]["message"]["contextId"] = "ctx-7"
    answer = _post(mode, _transport(agent, guard), "http://agent/a2a", body)
    assert answer.status_code == 200
    assert answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {"task": agent.tasks[0]}}
    assert len(agent.sends) == 1
    look = agent.requests[1]
    assert json.loads(look.content)["method"] == "ListTasks"
    assert json.loads(look.content)["params"]["contextId"] == "ctx-7"
    assert str(look.url) == "http://agent/a2a"
    assert look.headers["authorization"] == SECRET
    assert look.headers["user-agent"] == agent.requests[0].headers["user-agent"]


@LOOKUP_MODES
@pytest.mark.parametrize("prefix", [b"\n", b"  ", b"\xef\xbb\xbf"])
def test_a_lost_answer_to_a_send_written_with_a_prefix_is_looked_up(
    mode: str, prefix: bytes
) -> None:
    """Whitespace or a byte order mark before a send's JSON: still a send, never resent blind."""
    agent = LosingAgent("lose")
    content = prefix + json.dumps(send_message()).encode()
    make = _transport(agent, lookup_guard(FakeClock()))
    headers = {"content-type": "application/json"}
    if mode == "sync":
        with httpx.Client(transport=make("sync")) as client:
            answer = client.post("http://agent/a2a", content=content, headers=headers)
    else:

        async def go() -> httpx.Response:
            async with httpx.AsyncClient(transport=make("async")) as client:
                return await client.post("http://agent/a2a", content=content, headers=headers)

        answer = asyncio.run(go())
    assert answer.json()["result"]["task"] == agent.tasks[0]
    assert (len(agent.sends), len(agent.tasks)) == (1, 1)
    assert json.loads(agent.requests[1].content)["method"] == "ListTasks"


class ConfusedAgent(LosingAgent):
    """A `LosingAgent` whose GetTask answers another task than the one asked for (a cache)."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """GetTask answered with another context's task; everything else as the agent does."""
        body: Any = json.loads(request.content) if request.content else None
        if isinstance(body, dict) and body.get("method") == "GetTask":
            self.requests.append(request)
            other = {
                "id": "task-999",
                "contextId": "someone-else",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "history": [{"messageId": "not-mine", "role": "ROLE_USER", "parts": []}],
            }
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": other})
        return super().__call__(request)


@LOOKUP_MODES
def test_a_get_task_that_answers_another_task_is_not_handed_back(mode: str) -> None:
    """The listing finds the task; the GetTask that rereads it answers another: not taken."""
    agent = ConfusedAgent("lose")
    answer = _post(
        mode, _transport(agent, lookup_guard(FakeClock())), "http://agent/a2a", send_message()
    )
    assert answer.json()["result"]["task"] == agent.tasks[0]
    methods = [json.loads(r.content)["method"] for r in agent.requests]
    assert (methods[0], methods[-1], methods.count("SendMessage")) == ("SendMessage", "GetTask", 1)
    assert set(methods[1:-1]) == {"ListTasks"}


def test_a_recorded_task_read_back_as_another_task_is_already_sent(tmp_path: Path) -> None:
    """A journal's task read back by GetTask that answers another task: not handed back."""
    agent = ConfusedAgent("ok")
    journal = SqliteJournal(tmp_path / "sends.db")
    transport = GuardTransport(
        lookup_guard(FakeClock(), journal=journal),
        inner=httpx.MockTransport(agent),
        raise_failures=True,
    )
    with httpx.Client(transport=transport) as client:
        first = client.post("http://agent/a2a", json=send_message())
        with pytest.raises(AlreadySent) as raised:
            client.post("http://agent/a2a", json=send_message())
    journal.close()
    assert first.json()["result"]["task"]["id"] == "task-1"
    assert raised.value.journal_record.made == "task-1"
    assert len(agent.sends) == 1
    assert json.loads(agent.requests[-1].content)["method"] == "GetTask"


@LOOKUP_MODES
def test_lost_rest_answer_is_found_under_the_tenant(mode: str) -> None:
    """An HTTP+JSON send under a tenant is looked up with GET {tenant}/tasks."""
    agent = LosingAgent("lose")
    body = {"message": {"messageId": "msg-0001", "role": "ROLE_USER", "parts": []}}
    answer = _post(
        mode,
        _transport(agent, lookup_guard(FakeClock())),
        "http://agent/tenant-a/message:send",
        body,
    )
    assert answer.json() == {"task": agent.tasks[0]}
    look = agent.requests[1]
    assert (look.method, look.url.path) == ("GET", "/tenant-a/tasks")
    assert "statusTimestampAfter" not in look.url.params  # it would drop undated tasks
    assert look.url.params["includeArtifacts"] == "false"
    assert look.url.params["historyLength"] == "20"
    assert look.headers["authorization"] == SECRET


@LOOKUP_MODES
def test_lost_follow_up_is_found_by_get_task(mode: str) -> None:
    """A follow-up (taskId) is looked up with GetTask."""
    agent = LosingAgent("lose")
    body = send_message()
    body["params"]["message"]["taskId"] = "task-9"
    answer = _post(mode, _transport(agent, lookup_guard(FakeClock())), "http://agent/", body)
    assert answer.json()["result"]["task"]["id"] == "task-9"
    assert json.loads(agent.requests[1].content)["method"] == "GetTask"


@LOOKUP_MODES
def test_lost_stream_of_a_final_task_is_one_sse_event(mode: str) -> None:
    """A lost SendStreamingMessage whose task is final: one SSE event holding the task."""
    agent = LosingAgent("lose")
    answer = _post(
        mode,
        _transport(agent, lookup_guard(FakeClock())),
        "http://agent/",
        send_message("SendStreamingMessage"),
    )
    assert answer.headers["content-type"] == "text/event-stream"
    event = json.loads(answer.text.removeprefix("data: "))
    assert event == {"jsonrpc": "2.0", "id": 1, "result": {"task": agent.tasks[0]}}
    assert len(agent.sends) == 1


@LOOKUP_MODES
def test_lost_stream_of_a_working_task_is_resubscribed(mode: str) -> None:
    """A lost stream whose task still works: the subscription's stream is handed over."""
    agent = LosingAgent("lose", state="TASK_STATE_WORKING")
    answer = _post(
        mode,
        _transport(agent, lookup_guard(FakeClock())),
        "http://agent/v1/message:stream",
        {"message": {"messageId": "msg-0001", "role": "ROLE_USER", "parts": []}},
    )
    assert answer.headers["content-type"] == "text/event-stream"
    assert "statusUpdate" in answer.text
    subscribe = agent.requests[-1]
    assert (subscribe.method, subscribe.url.path) == ("POST", "/v1/tasks/task-1:subscribe")
    assert subscribe.headers["authorization"] == SECRET


@LOOKUP_MODES
def test_dropped_send_is_looked_for_and_never_resent(mode: str) -> None:
    """Nothing was made, but no listing proves it: looked for again and again, not resent."""
    clock = FakeClock()
    agent = LosingAgent("drop", "ok")
    earlier = {"messageId": "earlier", "role": "ROLE_USER", "parts": []}
    agent.tasks.append(agent._task(earlier))  # the listing works: it shows another task
    transport = _transport(agent, lookup_guard(clock), raise_failures=True)
    with pytest.raises(OutcomeUnknown) as caught:
        _post(mode, transport, "http://agent/", send_message())
    assert len(agent.sends) == 1
    assert caught.value.message_id == "msg-0001"
    looks = [json.loads(r.content)["method"] for r in agent.requests[1:]]
    assert set(looks) == {"ListTasks"}
    assert len(looks) == 9  # pauses 0.5, 1, 2, 4, then 5 s, within the look-up's 30 s
    assert clock.sleeps[:5] == [0.5, 1.0, 2.0, 4.0, 5.0]
    assert clock.now() < ExactlyOnce().timeout


@LOOKUP_MODES
def test_dropped_send_under_a_listing_contract_is_resent(mode: str) -> None:
    """A declared contract ("listed within 2 s"): absence 2 s after the loss allows a resend."""
    clock = FakeClock()
    agent = LosingAgent("drop", "ok")
    earlier = {"messageId": "earlier", "role": "ROLE_USER", "parts": []}
    agent.tasks.append(agent._task(earlier))
    contract = ExactlyOnce(listed_within={"http://agent:80": 2.0})
    guard = lookup_guard(clock, exactly_once=contract)
    answer = _post(mode, _transport(agent, guard), "http://agent/", send_message())
    assert answer.json()["result"]["task"]["history"][0]["messageId"] == "msg-0001"
    assert len(agent.sends) == 2
    assert agent.sends[0] == agent.sends[1]
    assert clock.now() >= 2.0


@LOOKUP_MODES
def test_cannot_look_raises_outcome_unknown_with_the_message(mode: str) -> None:
    """ListTasks refused: OutcomeUnknown names the messageId; nothing is resent."""

    def refuses(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body["method"] == "SendMessage":
            raise httpx.ReadError("lost", request=request)
        error = {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}}
        return httpx.Response(200, json=error)

    inner = httpx.MockTransport(refuses)
    guard = lookup_guard(FakeClock())

    def make(which: str) -> Any:
        kind = GuardTransport if which == "sync" else AsyncGuardTransport
        return kind(guard, inner=inner, raise_failures=True)

    body = send_message()
    body["params"]["message"]["contextId"] = "ctx-3"
    with pytest.raises(OutcomeUnknown) as caught:
        _post(mode, make, "http://agent/", body)
    failure = caught.value
    assert (failure.message_id, failure.context_id, failure.task_id) == ("msg-0001", "ctx-3", None)
    assert failure.sent is not None
    assert failure.sent.sent_at is not None
    assert "METHOD_NOT_FOUND" in failure.why or "CannotLook" in failure.why


@LOOKUP_MODES
def test_cannot_look_hands_back_the_raw_error_when_transparent(mode: str) -> None:
    """Without raise_failures, an unknown outcome reaches the client as the ReadError it was."""

    def refuses(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["method"] == "SendMessage":
            raise httpx.ReadError("lost", request=request)
        return httpx.Response(404, text="not here")

    inner = httpx.MockTransport(refuses)
    guard = lookup_guard(FakeClock())

    def make(which: str) -> Any:
        kind = GuardTransport if which == "sync" else AsyncGuardTransport
        return kind(guard, inner=inner)

    with pytest.raises(httpx.ReadError):
        _post(mode, make, "http://agent/", send_message())


@LOOKUP_MODES
def test_batch_with_a_send_is_outcome_unknown(mode: str) -> None:
    """A lost batch holding a SendMessage is not looked up and never resent."""
    agent = LosingAgent("lose")
    batch = [send_message(), get_task()]
    with pytest.raises(OutcomeUnknown) as caught:
        _post(
            mode,
            _transport(agent, lookup_guard(FakeClock()), raise_failures=True),
            "http://agent/",
            batch,
        )
    assert "batch" in caught.value.why
    assert len(agent.sends) == 1
    agent = LosingAgent("lose")
    with pytest.raises(httpx.ReadError):
        _post(mode, _transport(agent, lookup_guard(FakeClock())), "http://agent/", batch)
    assert len(agent.sends) == 1
    assert len(agent.requests) == 1


@LOOKUP_MODES
def test_batch_of_reads_is_retried(mode: str) -> None:
    """A lost batch of reads only is resent like any read."""
    agent = LosingAgent("drop", "ok")
    batch = [get_task(), get_task("task-2")]
    answer = _post(mode, _transport(agent, lookup_guard(FakeClock())), "http://agent/", batch)
    assert answer.status_code == 200
    assert len(agent.sends) == 2


@LOOKUP_MODES
@pytest.mark.parametrize("subscribe", ["fail", "refuse"])
def test_a_failed_resubscription_hands_back_the_task_as_one_event(
    mode: str, subscribe: str
) -> None:
    """The subscription to a working task fails or is refused: the task itself is the stream."""
    agent = LosingAgent("lose", state="TASK_STATE_WORKING", subscribe=subscribe)
    answer = _post(
        mode,
        _transport(agent, lookup_guard(FakeClock())),
        "http://agent/",
        send_message("SendStreamingMessage"),
    )
    assert answer.headers["content-type"] == "text/event-stream"
    event = json.loads(answer.text.removeprefix("data: "))
    assert event["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert json.loads(agent.requests[-1].content)["method"] == "SubscribeToTask"
    assert len(agent.sends) == 1


# --- bounded reading: past max_body a body streams through; a trickle cannot outlast the deadline


def test_a_body_past_max_body_streams_through_untouched_and_is_judged_by_its_status() -> None:
    """Past max_body a body streams through whole, judged by its status (503 retried, closed)."""
    big = b'{"result": "' + b"x" * 100_000 + b'"}'
    answers = iter([503, 200])
    closed: list[bool] = []

    class Body(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            for start in range(0, len(big), 4096):
                yield big[start : start + 4096]

        def close(self) -> None:
            closed.append(True)

    def peer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(next(answers), stream=Body())

    hook = RecordingHook()
    guard = Guard(policy=Policy(limits=Limits(max_body=1024)), hooks=[hook], sleep=lambda _: None)
    with httpx.Client(transport=GuardTransport(guard, inner=httpx.MockTransport(peer))) as client:
        response = client.get("http://agent.example/tasks/t-1")
    assert response.status_code == 200
    assert response.content == big
    assert [event.decision.action for event in hook.decisions] == [Action.RETRY, Action.OK]
    assert len(closed) == 2  # the 503 by the retry, the 200 by the client


def test_a_compression_bomb_is_not_inflated_by_the_transport() -> None:
    """A gzip body is counted as it inflates; past max_body it is handed on as it came."""
    bomb = gzip.compress(b"\0" * 4_000_000)
    seen: list[int] = []

    def peer(request: httpx.Request) -> httpx.Response:
        # stream=, not content=: a Response given content= reads (inflates) it at once.
        return httpx.Response(
            200, headers={"content-encoding": "gzip"}, stream=httpx.ByteStream(bomb)
        )

    guard = Guard(policy=Policy(limits=Limits(max_body=64 * 1024)), hooks=[RecordingHook()])
    with (
        httpx.Client(transport=GuardTransport(guard, inner=httpx.MockTransport(peer))) as client,
        client.stream("GET", "http://agent.example/tasks/t-1") as response,
    ):
        assert response.headers["content-encoding"] == "gzip"
        assert not response.is_stream_consumed  # the transport did not inflate it
        seen.extend(len(chunk) for chunk in response.iter_bytes())
    assert sum(seen) == 4_000_000


async def test_the_async_transport_streams_a_large_body_through() -> None:
    """AsyncGuardTransport reads no more than max_body either."""
    big = b'{"result": "' + b"y" * 50_000 + b'"}'

    async def peer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=big)

    guard = Guard(policy=Policy(limits=Limits(max_body=1024)), hooks=[RecordingHook()])
    transport = AsyncGuardTransport(guard, inner=httpx.MockTransport(peer))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get("http://agent.example/tasks/t-1")
    assert response.content == big


DRIP = Reply(
    200, b'{"result": {' + b" " * 2000 + b"}}", {"content-type": "application/json"}, pace=0.02
)


def test_a_trickling_body_cannot_outlast_the_deadline(loopback: Loopback) -> None:
    """A body sent a byte every 20 ms (40 s in all) is cut at Guard(deadline=0.5): a timeout."""
    loopback.script([DRIP])
    guard = Guard(deadline=0.5, sleep=lambda _: None)
    started = time.monotonic()
    with (
        httpx.Client(transport=GuardTransport(guard)) as client,
        pytest.raises(TimeoutError),
    ):
        client.get(f"{loopback.url}/tasks/t-1")
    assert time.monotonic() - started < 3.0


async def test_a_trickling_body_cannot_outlast_the_deadline_async(loopback: Loopback) -> None:
    """The async door holds the same deadline, watched or not."""
    loopback.script([DRIP])
    for hooks in ([], [RecordingHook()]):
        guard = Guard(deadline=0.5, hooks=hooks)
        started = time.monotonic()
        async with httpx.AsyncClient(transport=AsyncGuardTransport(guard)) as client:
            with pytest.raises(TimeoutError):
                await client.get(f"{loopback.url}/tasks/t-1")
        assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("mode", ["transport", "async-transport", "events", "unfinished"])
def test_memory_stays_bounded_whatever_the_peer_streams(mode: str) -> None:
    """300 MB through GuardTransport or iter_events: the child's peak RSS grows < 150 MB."""
    done = subprocess.run(  # noqa: S603 (our own worker)
        [sys.executable, "-m", "tests.memory_worker", mode, "--mb", "300"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert (found["peak_kb"] - found["before_kb"]) < 150 * 1024, found
    assert found["result"] == {"events": 4801, "unfinished": -1}.get(mode, 300 * 1024 * 1024 + 50)


DEDUPLICATING_CARD_EXTENSION = {
    "uri": "urn:a2a-client-errors:ext:deduplicate:v1",
    "required": False,
    "params": {"ttl": 3600},
}


def _card_of(url: str, *extensions: dict[str, Any]) -> dict[str, Any]:
    """An agent card listing one JSON-RPC interface at ``url``."""
    return {
        "name": "agent",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC"}],
        "capabilities": {"extensions": list(extensions)},
    }


@LOOKUP_MODES
def test_an_agent_whose_card_advertises_deduplication_is_resent_at_once(mode: str) -> None:
    """A lost send to an agent that says it deduplicates: its card read once, then resent."""
    agent = LosingAgent("ok", "lose", "ok")
    agent.card = _card_of("http://agent/a2a/", DEDUPLICATING_CARD_EXTENSION)
    agent.mark = {"ttl": 60, "perCaller": True}  # its answers say it deduplicates
    hook = RecordingHook()
    guard = lookup_guard(FakeClock(), hooks=[hook])
    first = send_message()
    first["params"]["message"]["messageId"] = "msg-first"
    _post(mode, _transport(agent, guard), "http://agent/a2a", first)  # answered, marked
    assert guard.facts("http://agent:80/a2a").dedupe_confirmed
    answer = _post(mode, _transport(agent, guard), "http://agent/a2a", send_message())
    assert answer.status_code == 200
    assert len(agent.sends) == 3  # resent, nothing looked up
    assert [json.loads(r.content)["method"] for r in agent.requests] == ["SendMessage"] * 3
    assert agent.card_reads == []  # the agent's own answers said it: no card needed
    assert hook.resolutions == ["deduplicating"]
    assert guard.facts("http://agent:80/a2a").deduplicates  # the interface, not the host


@LOOKUP_MODES
def test_a_card_read_by_the_look_up_is_read_once_per_agent(mode: str) -> None:
    """The look-up reads the card once (same origin, same credentials); known from then on."""
    agent = LosingAgent("lose", "ok")
    agent.card = _card_of("http://agent/a2a/", DEDUPLICATING_CARD_EXTENSION)
    guard = lookup_guard(FakeClock())
    _post(mode, _transport(agent, guard), "http://agent/a2a", send_message())
    assert [r.url.path for r in agent.card_reads] == ["/.well-known/agent-card.json"]
    assert agent.card_reads[0].headers["authorization"] == SECRET  # the same origin
    assert guard.facts("http://agent:80/a2a").deduplicates
    body = send_message()
    body["params"]["message"]["messageId"] = "msg-2"
    _post(mode, _transport(agent, guard), "http://agent/a2a", body)
    assert len(agent.card_reads) == 1


@LOOKUP_MODES
def test_a_card_no_answer_confirms_is_looked_up_not_resent(mode: str) -> None:
    """A card that claims deduplication (stale, behind a hop), no mark on the answers."""
    agent = LosingAgent("lose", "ok")
    agent.card = _card_of("http://agent/a2a/", DEDUPLICATING_CARD_EXTENSION)
    hook = RecordingHook()
    guard = lookup_guard(FakeClock(), hooks=[hook])
    answer = _post(mode, _transport(agent, guard), "http://agent/a2a", send_message())
    assert answer.json()["result"]["task"] == agent.tasks[0]  # found by the look-up
    assert len(agent.sends) == 1
    assert hook.resolutions == ["found"]


@LOOKUP_MODES
def test_a_card_of_another_agent_on_the_host_is_not_believed(mode: str) -> None:
    """A card that does not list the interface the send went to is another agent's."""
    agent = LosingAgent("lose")
    agent.card = _card_of("http://agent/other", DEDUPLICATING_CARD_EXTENSION)
    answer = _post(
        mode, _transport(agent, lookup_guard(FakeClock())), "http://agent/a2a", send_message()
    )
    assert answer.json()["result"]["task"] == agent.tasks[0]  # looked up and found instead
    assert len(agent.sends) == 1


@LOOKUP_MODES
def test_a_card_beside_the_interface_path_is_read_first(mode: str) -> None:
    """An agent served under a path prefix publishes its card there: read before the root."""
    agent = LosingAgent("lose")
    _post(
        mode,
        _transport(agent, lookup_guard(FakeClock())),
        "http://agent/team/a2a",
        send_message(),
    )
    assert [r.url.path for r in agent.card_reads] == [
        "/team/.well-known/agent-card.json",
        "/.well-known/agent-card.json",
    ]


@LOOKUP_MODES
def test_another_agent_on_the_same_host_is_not_taken_to_deduplicate(mode: str) -> None:
    """What one agent's card says is learnt for its interface, not for the whole host."""
    agent = LosingAgent("ok", "lose", "ok", "lose", "ok")
    agent.card = _card_of("http://agent/a", DEDUPLICATING_CARD_EXTENSION)
    agent.mark = {"ttl": 60}
    guard = lookup_guard(FakeClock())
    first = send_message()
    first["params"]["message"]["messageId"] = "msg-first"
    _post(mode, _transport(agent, guard), "http://agent/a", first)
    _post(mode, _transport(agent, guard), "http://agent/a", send_message())
    assert len(agent.sends) == 3  # /a says it deduplicates, and its answers: resent
    body = send_message()
    body["params"]["message"]["messageId"] = "msg-b"
    answer = _post(mode, _transport(agent, guard), "http://agent/b", body)
    assert len(agent.sends) == 4  # /b's lost answer was looked up and found, not resent
    assert answer.json()["result"]["task"]["history"][0]["messageId"] == "msg-b"
    assert not guard.facts("http://agent:80/b").deduplicates


@pytest.mark.parametrize(
    ("url", "agent"),
    [
        ("http://agent/a2a?x=1", "http://agent:80/a2a"),
        ("https://agent/", "https://agent:443"),
        ("http://agent:8080/t1/message:send", "http://agent:8080/t1"),
        ("http://agent/message:stream", "http://agent:80"),
    ],
)
def test_agent_of_names_the_interface(url: str, agent: str) -> None:
    """The agent a send goes to: scheme, host, port and the interface's path."""
    assert agent_of(httpx.Request("POST", url)) == agent

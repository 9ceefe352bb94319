"""`deduplicate` around a real a2a-sdk 1.3.0 DefaultRequestHandler, over its three bindings.

Each test starts its own agent (tests/dedupe_worker.py: an executor that counts its runs) on
127.0.0.1: JSON-RPC and HTTP+JSON under uvicorn (tests/asgi.py), gRPC on ``grpc.aio``, every
server stopped by the test, every request bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
import pytest
from a2a.server.request_handlers import GrpcHandler
from a2a.types import a2a_pb2, a2a_pb2_grpc

from tests.asgi import serve
from tests.dedupe_worker import JSONRPC_PATH, REST_PREFIX, Agent, build_agent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.e2e

HEADERS = {"A2A-Version": "1.0"}
TIMEOUT = 10.0


def message(message_id: str, text: str = "count") -> dict[str, Any]:
    """A user message, as JSON."""
    return {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}


@pytest.fixture
def http_agent() -> Iterator[tuple[Agent, str]]:
    """An agent served over JSON-RPC and HTTP+JSON; its base URL."""
    agent = build_agent()
    with serve(agent.app) as base_url:
        yield agent, base_url


async def send_jsonrpc(client: httpx.AsyncClient, base: str, message_id: str) -> dict[str, Any]:
    """SendMessage over JSON-RPC; the task."""
    body = {
        "jsonrpc": "2.0",
        "id": str(uuid.uuid4()),
        "method": "SendMessage",
        "params": {"message": message(message_id)},
    }
    response = await client.post(base + JSONRPC_PATH, json=body)
    payload = response.json()
    assert "result" in payload, payload
    task: dict[str, Any] = payload["result"]["task"]
    return task


async def send_rest(client: httpx.AsyncClient, base: str, message_id: str) -> dict[str, Any]:
    """SendMessage over HTTP+JSON; the task."""
    response = await client.post(
        f"{base}{REST_PREFIX}/message:send", json={"message": message(message_id)}
    )
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


async def stream_events(
    client: httpx.AsyncClient, base: str, binding: str, message_id: str
) -> list[dict[str, Any]]:
    """SendStreamingMessage; every event (a StreamResponse as JSON)."""
    return [event async for event in open_stream(client, base, binding, message_id)]


async def open_stream(
    client: httpx.AsyncClient, base: str, binding: str, message_id: str
) -> AsyncIterator[dict[str, Any]]:
    """SendStreamingMessage; its events (StreamResponses as JSON), as they come."""
    if binding == "jsonrpc":
        url = base + JSONRPC_PATH
        body: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {"message": message(message_id)},
        }
    else:
        url = f"{base}{REST_PREFIX}/message:stream"
        body = {"message": message(message_id)}
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data = json.loads(line[5:])
                yield data.get("result", data)


def task_id_of(event: dict[str, Any]) -> str:
    """The task id an event names."""
    for kind in ("task", "statusUpdate", "artifactUpdate"):
        if kind in event:
            holder = event[kind]
            return str(holder.get("id") or holder.get("taskId"))
    raise AssertionError(event)


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_the_same_message_twice_over_http_makes_one_task(
    http_agent: tuple[Agent, str], binding: str
) -> None:
    """Twice the same messageId: one executor run, the same task, COMPLETED."""
    agent, base = http_agent
    send = send_jsonrpc if binding == "jsonrpc" else send_rest
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
        first = await send(client, base, "m-twice")
        second = await send(client, base, "m-twice")
        other = await send(client, base, "m-other")
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert other["id"] != first["id"]
    assert agent.executor.runs == 2


async def test_ten_concurrent_duplicates_over_http_make_one_task(
    http_agent: tuple[Agent, str],
) -> None:
    """Ten at once, over both HTTP bindings: one executor run, one task id."""
    agent, base = http_agent
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
        calls = [
            (send_jsonrpc if index % 2 else send_rest)(client, base, "m-ten") for index in range(10)
        ]
        tasks = await asyncio.gather(*calls)
    assert len({task["id"] for task in tasks}) == 1
    assert agent.executor.runs == 1


async def test_an_executor_that_raises_after_its_task_is_not_run_again(
    http_agent: tuple[Agent, str],
) -> None:
    """The first attempt fails (the executor raised); the resend gets its FAILED task."""
    agent, base = http_agent
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": message("m-raise", "raise")},
    }
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
        failed = (await client.post(base + JSONRPC_PATH, json=body)).json()
        again = (await client.post(base + JSONRPC_PATH, json=body)).json()
    assert "error" in failed, failed
    assert again["result"]["task"]["status"]["state"] == "TASK_STATE_FAILED", again
    assert agent.executor.runs == 1


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_streaming_resend_delivers_the_same_task(
    http_agent: tuple[Agent, str], binding: str
) -> None:
    """A stream, then the same message streamed again: the same task, ended; one run."""
    agent, base = http_agent
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
        first = await stream_events(client, base, binding, "m-stream")
        again = await stream_events(client, base, binding, "m-stream")
        unary = await send_jsonrpc(client, base, "m-stream")
    task_id = task_id_of(first[0])
    assert {task_id_of(event) for event in first} == {task_id}
    assert [task_id_of(event) for event in again] == [task_id]
    assert again[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert unary["id"] == task_id
    assert agent.executor.runs == 1


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_streaming_resend_while_the_first_runs_follows_it(
    http_agent: tuple[Agent, str], binding: str
) -> None:
    """The resend of a running stream resumes the task and ends with it; one run."""
    agent, base = http_agent
    hold = threading.Event()
    agent.executor.hold = hold
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
        first = open_stream(client, base, binding, "m-follow")
        opening = await anext(first)
        second = open_stream(client, base, binding, "m-follow")
        resumed = await anext(second)  # the task, while it still runs
        assert task_id_of(resumed) == task_id_of(opening)
        assert resumed["task"]["status"]["state"] == "TASK_STATE_WORKING"
        hold.set()
        rest_first = [event async for event in first]
        rest_second = [event async for event in second]
    task_id = task_id_of(opening)
    assert {task_id_of(event) for event in rest_second} == {task_id}
    assert rest_first[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert rest_second[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert agent.executor.runs == 1


@contextlib.asynccontextmanager
async def grpc_agent() -> AsyncIterator[tuple[Agent, str]]:
    """An agent served over gRPC on this test's loop; its target. Stopped, bounded."""
    agent = build_agent()
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    stubs: Any = a2a_pb2_grpc
    stubs.add_A2AServiceServicer_to_server(GrpcHandler(agent.handler), server)
    await server.start()
    try:
        yield agent, f"127.0.0.1:{port}"
    finally:
        await asyncio.wait_for(server.stop(0.5), 5)
        await asyncio.wait_for(agent.handler.aclose(), 5)


def grpc_request(message_id: str) -> a2a_pb2.SendMessageRequest:
    """A SendMessageRequest."""
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=message_id,
            role=a2a_pb2.Role.ROLE_USER,
            parts=[a2a_pb2.Part(text="count")],
        )
    )


async def test_the_same_message_over_grpc_makes_one_task() -> None:
    """Twice, then ten at once, then streamed: one executor run, one task."""
    async with grpc_agent() as (agent, target), grpc.aio.insecure_channel(target) as channel:
        stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        first = await stub.SendMessage(grpc_request("m-grpc"), timeout=TIMEOUT)
        second = await stub.SendMessage(grpc_request("m-grpc"), timeout=TIMEOUT)
        assert second.task.id == first.task.id
        assert agent.executor.runs == 1
        answers = await asyncio.gather(
            *(stub.SendMessage(grpc_request("m-grpc-ten"), timeout=TIMEOUT) for _ in range(10))
        )
        assert len({answer.task.id for answer in answers}) == 1
        assert agent.executor.runs == 2
        streamed = [
            event
            async for event in stub.SendStreamingMessage(grpc_request("m-grpc"), timeout=TIMEOUT)
        ]
        assert [event.task.id for event in streamed] == [first.task.id]
        assert streamed[0].task.status.state == a2a_pb2.TaskState.TASK_STATE_COMPLETED
        assert agent.executor.runs == 2

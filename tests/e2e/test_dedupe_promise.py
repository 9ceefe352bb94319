"""`deduplicate` keeps the word its card gives, on a real a2a-sdk 1.x agent and its bindings.

The agent (tests/dedupe_worker.py) runs under uvicorn on 127.0.0.1 (JSON-RPC and HTTP+JSON,
under `A2AErrorMiddleware` unless said otherwise) and on ``grpc.aio``; every server is stopped
by the test and every request bounded by a timeout. Time is the store's injected clock.

* A first attempt that runs past the ttl keeps its claim; the ttl counts from its end.
* A store that cannot take a message refuses it before anything runs: 503 with
  ``Retry-After`` (gRPC ``UNAVAILABLE`` with its retry delay), which `classify` reads as
  *not processed*, ``retry``; nothing the store holds is dropped for it.
* Every answer carries the extension's mark; the task store's task does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import httpx
import pytest
import redis.asyncio
from a2a.server.request_handlers import GrpcHandler
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf.json_format import MessageToDict

from a2a_client_errors import Action, Delivery, classify
from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION, DedupeParams, read_dedupe_mark
from a2a_client_errors.server import DedupeRecord, MemoryDedupeStore, RedisDedupeStore
from a2a_client_errors.testing.peer import EmbeddedPeer
from tests.asgi import serve
from tests.dedupe_worker import JSONRPC_PATH, REST_PREFIX, Agent, build_agent
from tests.e2e.test_dedupe import grpc_request, message, open_stream
from tests.redis_server import free_port

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0
HEADERS = {"A2A-Version": "1.0"}


class Clock:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        """__init__."""
        self.now = 1000.0

    def __call__(self) -> float:
        """The time now."""
        return self.now


class Watched(MemoryDedupeStore):
    """A memory store that says when a duplicate starts waiting for a first attempt."""

    def __init__(self, **options: Any) -> None:
        """__init__."""
        super().__init__(**options)
        self.waiting = threading.Event()

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """Say so, then wait."""
        self.waiting.set()
        return await super().wait(key, timeout)


@contextlib.contextmanager
def served(**options: Any) -> Iterator[tuple[Agent, str]]:
    """An agent (``options`` go to `build_agent`) over JSON-RPC and HTTP+JSON; its base URL."""
    agent = build_agent(**options)
    with serve(agent.app) as base_url:
        yield agent, base_url


def jsonrpc(method: str, message_id: str, request_id: int = 7) -> dict[str, Any]:
    """A JSON-RPC request of ``method`` for a message."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {"message": message(message_id)},
    }


async def send(
    client: httpx.AsyncClient, base: str, binding: str, message_id: str, *, stream: bool = False
) -> httpx.Response:
    """One send over an HTTP binding, unary or streamed; the whole response."""
    if binding == "jsonrpc":
        method = "SendStreamingMessage" if stream else "SendMessage"
        return await client.post(base + JSONRPC_PATH, json=jsonrpc(method, message_id))
    route = "message:stream" if stream else "message:send"
    body = {"message": message(message_id)}
    return await client.post(f"{base}{REST_PREFIX}/{route}", json=body)


def task_of(response: httpx.Response) -> dict[str, Any]:
    """The task a unary send answered with (either HTTP binding)."""
    assert response.status_code == 200, response.text
    payload = response.json()
    task: dict[str, Any] = payload.get("result", payload)["task"]
    return task


# --------------------------------------------------------------------------------------------
# The ttl: never while running, then counted from the end
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
async def test_a_task_longer_than_the_ttl_runs_once(binding: str) -> None:
    """A ttl of 2 s, a task of 4 s, a resend at 3 s: it waits and gets the task; one run.

    Once the task ended, a resend 1.9 s later still gets it; 2.1 s later the message is new.
    """
    clock = Clock()
    store = Watched(clock=clock)
    with served(store=store, ttl=2) as (agent, base):
        hold = threading.Event()
        agent.executor.hold = hold
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
            first = asyncio.create_task(send(client, base, binding, "m-long"))
            assert await asyncio.to_thread(agent.executor.started.wait, TIMEOUT)
            clock.now += 3
            resend = asyncio.create_task(send(client, base, binding, "m-long"))
            assert await asyncio.to_thread(store.waiting.wait, TIMEOUT)
            clock.now += 1
            hold.set()
            task, again = task_of(await first), task_of(await resend)
            assert again["id"] == task["id"]
            assert again["status"]["state"] == "TASK_STATE_COMPLETED"
            assert agent.executor.runs == 1
            clock.now += 1.9
            assert task_of(await send(client, base, binding, "m-long"))["id"] == task["id"]
            assert agent.executor.runs == 1
            clock.now += 0.2
            assert task_of(await send(client, base, binding, "m-long"))["id"] != task["id"]
            assert agent.executor.runs == 2


# --------------------------------------------------------------------------------------------
# A full store refuses: 503 + Retry-After, not processed, retry; nothing it holds is dropped
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
async def test_a_full_store_answers_503_read_as_not_processed(binding: str, stream: bool) -> None:
    """Full of records within their ttl: the new send is 503, Retry-After, unrun; the rest stay."""
    clock = Clock()
    store = MemoryDedupeStore(max_entries=2, clock=clock)
    with served(store=store, ttl=60) as (agent, base):
        async with (
            httpx.AsyncClient(timeout=TIMEOUT, headers={**HEADERS, "X-API-Key": "a"}) as alice,
            httpx.AsyncClient(timeout=TIMEOUT, headers={**HEADERS, "X-API-Key": "b"}) as bob,
        ):
            kept_a = task_of(await send(alice, base, binding, "m-a"))
            kept_b = task_of(await send(bob, base, binding, "m-b"))
            clock.now += 15
            refused = await send(alice, base, binding, "m-new", stream=stream)
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "45"  # when the first record expires
            decision = classify(refused, operation="SendMessage")
            assert decision.error is not None
            assert decision.error.delivery is Delivery.NOT_PROCESSED
            assert decision.action is Action.RETRY
            assert decision.retry_after == pytest.approx(45.0)
            body = refused.json()
            if binding == "jsonrpc":
                assert body["id"] == 7
                assert body["error"]["code"] == -32000
            else:
                assert body["error"]["status"] == "UNAVAILABLE"
            assert agent.executor.runs == 2
            # bob's late resend, inside the ttl: still answered with his task, not run again
            assert task_of(await send(bob, base, binding, "m-b"))["id"] == kept_b["id"]
            assert task_of(await send(alice, base, binding, "m-a"))["id"] == kept_a["id"]
            assert agent.executor.runs == 2
            clock.now += 46  # both records are past their ttl: the new message gets room
            assert task_of(await send(alice, base, binding, "m-new"))["id"] not in {
                kept_a["id"],
                kept_b["id"],
            }
            assert agent.executor.runs == 3
    assert store.refusals == 1
    assert store.evictions == 1


async def test_without_the_middleware_jsonrpc_still_answers_503() -> None:
    """No A2AErrorMiddleware: JSON-RPC's refusal is Starlette's 503 with Retry-After, unrun."""
    store = MemoryDedupeStore(max_entries=1)
    with served(store=store, middleware=False) as (agent, base):
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
            task_of(await send(client, base, "jsonrpc", "m-1"))
            refused = await send(client, base, "jsonrpc", "m-2")
            rest = await send(client, base, "http+json", "m-3")
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "86400"
    decision = classify(refused, operation="SendMessage")
    assert decision.error is not None
    assert decision.error.delivery is Delivery.NOT_PROCESSED
    assert decision.action is Action.RETRY
    # HTTP+JSON cannot say it without the middleware: an internal error (looked up, not resent)
    assert rest.status_code == 500
    assert agent.executor.runs == 1


async def test_redis_down_refuses_over_http() -> None:
    """Nobody listens at the store's Redis: each send is 503, not processed, and never runs."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.5)
    store = RedisDedupeStore(client, retry_after=3)
    with served(store=store) as (agent, base):
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as http:
            for binding in ("jsonrpc", "http+json"):
                refused = await send(http, base, binding, "m-down")
                assert refused.status_code == 503, refused.text
                assert refused.headers["retry-after"] == "3"
                decision = classify(refused, operation="SendMessage")
                assert decision.error is not None
                assert decision.error.delivery is Delivery.NOT_PROCESSED
                assert decision.action is Action.RETRY
    assert agent.executor.runs == 0
    assert store.failures == 2
    await store.aclose()


@contextlib.asynccontextmanager
async def grpc_agent(**options: Any) -> AsyncIterator[tuple[Agent, Any]]:
    """An agent served over gRPC on this test's loop; a stub. Stopped, bounded."""
    agent = build_agent(**options)
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    stubs: Any = a2a_pb2_grpc
    stubs.add_A2AServiceServicer_to_server(GrpcHandler(agent.handler), server)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield agent, stubs.A2AServiceStub(channel)
    finally:
        await asyncio.wait_for(server.stop(0.5), 5)
        await asyncio.wait_for(agent.handler.aclose(), 5)


async def test_a_full_store_over_grpc_is_unavailable_read_as_not_processed() -> None:
    """gRPC: UNAVAILABLE with its RetryInfo and pushback, unary and streamed; not processed."""
    clock = Clock()
    store = MemoryDedupeStore(max_entries=1, clock=clock)
    async with grpc_agent(store=store, ttl=30) as (agent, stub):
        await stub.SendMessage(grpc_request("m-1"), timeout=TIMEOUT)
        clock.now += 10
        failures = []
        with pytest.raises(grpc.aio.AioRpcError) as unary:
            await stub.SendMessage(grpc_request("m-2"), timeout=TIMEOUT)
        failures.append(unary.value)
        with pytest.raises(grpc.aio.AioRpcError) as streamed:
            async for _ in stub.SendStreamingMessage(grpc_request("m-2"), timeout=TIMEOUT):
                pass
        failures.append(streamed.value)
        for failure in failures:
            assert failure.code() is grpc.StatusCode.UNAVAILABLE
            assert dict(failure.trailing_metadata())["grpc-retry-pushback-ms"] == "20000"
            decision = classify(failure, operation="SendMessage")
            assert decision.error is not None
            assert decision.error.delivery is Delivery.NOT_PROCESSED
            assert decision.action is Action.RETRY
            assert decision.retry_after == pytest.approx(20.0)
        assert agent.executor.runs == 1


# --------------------------------------------------------------------------------------------
# The mark on every answer, on every binding
# --------------------------------------------------------------------------------------------

MARK = DedupeParams(ttl=600.0, per_caller=True)


@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
async def test_every_http_answer_carries_the_mark(binding: str) -> None:
    """Unary and streamed, first send and resend: marked; GetTask's task is not."""
    with served(ttl=600) as (_, base):
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=HEADERS) as client:
            first = await send(client, base, binding, "m-mark")
            again = await send(client, base, binding, "m-mark")
            assert read_dedupe_mark(first.json()) == MARK
            assert read_dedupe_mark(again.json()) == MARK
            assert task_of(first)["metadata"][DEDUPLICATE_EXTENSION] == {
                "ttl": 600.0,
                "perCaller": True,
            }
            events = [event async for event in open_stream(client, base, _wire(binding), "m-s")]
            resumed = [event async for event in open_stream(client, base, _wire(binding), "m-s")]
            task_id = task_of(first)["id"]
            stored = await client.get(f"{base}{REST_PREFIX}/tasks/{task_id}")
    assert read_dedupe_mark(events[0]) == MARK  # the Task that opens the stream
    assert [read_dedupe_mark(event) for event in resumed] == [MARK]
    assert stored.status_code == 200, stored.text
    assert read_dedupe_mark(stored.json()) is None


def _wire(binding: str) -> str:
    """The binding's name in tests/e2e/test_dedupe.py's helpers."""
    return "jsonrpc" if binding == "jsonrpc" else "rest"


async def test_every_grpc_answer_carries_the_mark() -> None:
    """gRPC, unary and streamed, first send and resend: marked; GetTask's task is not."""
    async with grpc_agent(ttl=600) as (_, stub):
        first = await stub.SendMessage(grpc_request("m-mark"), timeout=TIMEOUT)
        again = await stub.SendMessage(grpc_request("m-mark"), timeout=TIMEOUT)
        events = [
            event async for event in stub.SendStreamingMessage(grpc_request("m-s"), timeout=TIMEOUT)
        ]
        resumed = [
            event async for event in stub.SendStreamingMessage(grpc_request("m-s"), timeout=TIMEOUT)
        ]
        stored = await stub.GetTask(a2a_pb2.GetTaskRequest(id=first.task.id), timeout=TIMEOUT)
    assert read_dedupe_mark(first) == MARK
    assert read_dedupe_mark(again) == MARK
    assert read_dedupe_mark(MessageToDict(first)) == MARK
    assert read_dedupe_mark(events[0]) == MARK
    assert [read_dedupe_mark(event) for event in resumed] == [MARK]
    assert read_dedupe_mark(stored) is None


def test_the_embedded_peer_answers_a_refusal_503_on_both_http_bindings() -> None:
    """`EmbeddedPeer(deduplicate=True)` serves under the middleware: a full store is a 503."""
    store = MemoryDedupeStore(max_entries=1)
    with EmbeddedPeer(deduplicate=True, dedupe_options={"store": store}) as peer:
        body = {"message": message("m-first")}
        with httpx.Client(timeout=TIMEOUT, headers=HEADERS) as client:
            assert client.post(peer.rest_url + "/message:send", json=body).status_code == 200
            refused = [
                client.post(peer.rest_url + "/message:send", json={"message": message("m-2")}),
                client.post(peer.jsonrpc_url, json=jsonrpc("SendMessage", "m-2")),
            ]
    for answer in refused:
        assert answer.status_code == 503, answer.text
        assert classify(answer, operation="SendMessage").action is Action.RETRY
    assert store.refusals == 2

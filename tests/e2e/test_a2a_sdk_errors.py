"""`with_a2a_errors` inside a real a2a-sdk 1.3.0 agent, called by a2a-sdk's own client.

The agent (tests/errors_agent.py) runs a2a-sdk's ``DefaultRequestHandler``, its JSON-RPC and
REST routes under uvicorn (tests/asgi.py) and its ``GrpcHandler`` on ``grpc.aio``, all on
127.0.0.1, each stopped by the test. Its executor raises each of the nine `A2AError`s and one
unexpected exception, before its first event or after it; the client calls unary and
streaming, on one pooled connection per client (httpx ``max_connections=1``, one gRPC channel).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2, a2a_pb2_grpc
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import A2A_REASON_TO_ERROR, InternalError

from a2a_client_errors import Reason, normalize
from tests.asgi import serve
from tests.errors_agent import (
    JSONRPC_PATH,
    NINE,
    REST_PREFIX,
    SECRET,
    Agent,
    build_agent,
    card,
    error_for,
    grpc_servicer,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.e2e

PROTOCOLS = {
    "jsonrpc": TransportProtocol.JSONRPC,
    "rest": TransportProtocol.HTTP_JSON,
    "grpc": TransportProtocol.GRPC,
}
WHATS = [*(reason.value for reason in NINE), "BUG"]
MODES = [("unary", "early"), ("unary", "late"), ("stream", "early"), ("stream", "after")]
ROUNDS = 20
TIMEOUT = 10.0


@contextlib.asynccontextmanager
async def running(order: str = "errors") -> AsyncIterator[tuple[Agent, Any]]:
    """The agent on its three bindings, and its card; every server stopped, bounded."""
    agent = build_agent(order)
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    stubs: Any = a2a_pb2_grpc
    stubs.add_A2AServiceServicer_to_server(grpc_servicer(agent), server)
    await server.start()
    try:
        with serve(agent.app) as base_url:
            yield agent, card(base_url, f"127.0.0.1:{port}")
    finally:
        await asyncio.wait_for(server.stop(0.5), 5)


@contextlib.asynccontextmanager
async def sdk_client(agent_card: Any, binding: str, *, streaming: bool) -> AsyncIterator[Any]:
    """a2a-sdk's client on one binding, over one pooled connection."""
    http = pooled()
    config = ClientConfig(
        streaming=streaming,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[PROTOCOLS[binding]],
    )
    client = ClientFactory(config).create(agent_card)
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


def pooled() -> httpx.AsyncClient:
    """An httpx client that holds one connection: every request reuses it while it is open."""
    return httpx.AsyncClient(
        timeout=TIMEOUT, headers={"A2A-Version": "1.0"}, limits=httpx.Limits(max_connections=1)
    )


def request(text: str) -> a2a_pb2.SendMessageRequest:
    """A SendMessageRequest with one text part."""
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=str(uuid.uuid4()),
            role=a2a_pb2.Role.ROLE_USER,
            parts=[a2a_pb2.Part(text=text)],
        )
    )


async def send(
    client: Any, text: str, agent: Agent | None = None
) -> tuple[list[str], Exception | None]:
    """Send; the kinds of the events received, and the exception that ended the call.

    With ``agent``, the executor is told once the first event arrived (``after`` streams).
    """
    kinds: list[str] = []
    try:
        async for event in client.send_message(request(text)):
            kinds.append(event.WhichOneof("payload"))
            if agent is not None:
                agent.executor.go.set()
    except Exception as exc:  # what the client raised is what the test looks at
        return kinds, exc
    return kinds, None


def assert_seen(binding: str, what: str, exc: Exception | None) -> None:
    """The client raised the error the executor raised (the generic one for the bug)."""
    if what == "BUG":
        assert type(exc) is InternalError, exc
        assert exc.message.startswith("Internal error (reference ")
        assert SECRET not in repr(exc)
        return
    expected = error_for(Reason(what))
    assert type(exc) is A2A_REASON_TO_ERROR[what], exc
    assert exc.message == expected.message
    if binding != "grpc":  # a2a-sdk's gRPC client keeps no metadata; the raw test reads it
        assert exc.data == expected.metadata


@pytest.mark.parametrize("binding", list(PROTOCOLS))
async def test_each_error_reaches_a2a_sdks_client_and_the_connection_serves_the_next_call(
    binding: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Twenty rounds of ten errors x four modes, each followed by a call that succeeds."""
    caplog.set_level(logging.CRITICAL, logger="a2a")  # a2a-sdk's own lines, not under test
    async with (
        running() as (agent, agent_card),
        sdk_client(agent_card, binding, streaming=False) as unary,
        sdk_client(agent_card, binding, streaming=True) as streaming,
    ):
        for _ in range(ROUNDS):
            for (kind, when), what in ((mode, what) for mode in MODES for what in WHATS):
                client = unary if kind == "unary" else streaming
                kinds, exc = await send(client, f"{when}:{what}", agent)
                assert_seen(binding, what, exc)
                if kind == "stream":  # after the first event: the events came, then the error
                    assert kinds[:1] == ([] if when == "early" else ["task"]), kinds
                follow, failed = await send(client, "ok")
                assert failed is None, failed
                assert follow[-1] in ("task", "status_update")
    if binding == "grpc":  # grpcio shares one HTTP/2 connection per target: one for all
        assert len(set(agent.peers)) == 1


async def test_over_http_the_unary_client_keeps_one_connection_for_every_call() -> None:
    """Eighty errors and eighty follow-ups over each HTTP binding: one TCP connection each."""
    async with running() as (agent, agent_card):
        for binding in ("jsonrpc", "rest"):
            first = len(agent.peers)
            async with sdk_client(agent_card, binding, streaming=False) as client:
                for when, what in ((when, what) for when in ("early", "late") for what in WHATS):
                    _, exc = await send(client, f"{when}:{what}")
                    assert_seen(binding, what, exc)
                    assert (await send(client, "ok"))[1] is None
                    _, exc = await send(client, f"{when}:{what}")
                    assert_seen(binding, what, exc)
                    assert (await send(client, "ok"))[1] is None
            assert len(set(agent.peers[first:])) == 1, set(agent.peers[first:])


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_stream_that_fails_after_its_first_event_ends_cleanly(binding: str) -> None:
    """The error event, then the end of the response: the next call rides the same connection.

    a2a-sdk's client stops reading at the error event and drops its connection itself; a client
    that reads the stream to its end finds the connection open.
    """
    async with (
        running() as (agent, agent_card),
        httpx.AsyncClient(
            timeout=TIMEOUT, headers={"A2A-Version": "1.0"}, limits=httpx.Limits(max_connections=1)
        ) as http,
    ):
        base = agent_base(agent_card)
        for what in ("TASK_NOT_FOUND", "BUG"):
            events = await raw_stream(http, base, binding, f"late:{what}")
            error = normalize(events[-1])
            assert error is not None
            expected = Reason.INTERNAL_ERROR if what == "BUG" else Reason(what)
            assert error.reason is expected
            assert SECRET not in json.dumps(events)
            ok = await raw_stream(http, base, binding, "ok")
            assert "error" not in ok[-1]
        assert len(set(agent.peers)) == 1


def agent_base(agent_card: Any) -> str:
    """The HTTP base URL of the agent (its JSON-RPC interface, without the path)."""
    url: str = agent_card.supported_interfaces[0].url
    return url.removesuffix(JSONRPC_PATH)


async def raw_stream(
    http: httpx.AsyncClient, base: str, binding: str, text: str, agent: Agent | None = None
) -> list[dict[str, Any]]:
    """SendStreamingMessage over plain httpx, read to its end; every event's data."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if binding == "jsonrpc":
        url = base + JSONRPC_PATH
        body: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "SendStreamingMessage",
            "params": {"message": message},
        }
    else:
        url, body = f"{base}{REST_PREFIX}/message:stream", {"message": message}
    async with http.stream("POST", url, json=body) as response:
        return [
            json.loads(line[5:])
            async for line in response.aiter_lines()
            if line.startswith("data:")
        ]


async def drain(stream: Any, received: list[Any], agent: Agent) -> None:
    """Read a server stream to its end, keeping what it sent; tell the executor it started."""
    async for event in stream:
        received.append(event)
        agent.executor.go.set()


async def test_over_grpc_the_status_carries_the_metadata() -> None:
    """A raw stub reads the ErrorInfo and its metadata from the trailer, unary and streamed."""
    async with (
        running() as (agent, agent_card),
        grpc.aio.insecure_channel(agent_card.supported_interfaces[2].url) as channel,
    ):
        stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        for reason in NINE:
            with pytest.raises(grpc.aio.AioRpcError) as unary:
                await stub.SendMessage(request(f"early:{reason.value}"), timeout=TIMEOUT)
            stream = stub.SendStreamingMessage(request(f"after:{reason.value}"), timeout=TIMEOUT)
            received: list[Any] = []
            with pytest.raises(grpc.aio.AioRpcError) as streamed:
                await drain(stream, received, agent)
            assert len(received) >= 1
            for rpc in (unary.value, streamed.value):
                error = normalize(rpc)
                assert error is not None
                assert (error.reason, dict(error.metadata)) == (reason, error_for(reason).metadata)
                assert rpc.code().name == error_for(reason).codes[1]


@pytest.mark.parametrize("order", ["errors-dedupe", "dedupe-errors"])
async def test_with_a2a_errors_composes_with_deduplicate_either_way(order: str) -> None:
    """Either order: the errors arrive as raised, and a resend of one message makes one task."""
    async with running(order) as (_, agent_card):
        for binding in PROTOCOLS:
            async with sdk_client(agent_card, binding, streaming=False) as client:
                for what in ("VERSION_NOT_SUPPORTED", "BUG"):
                    _, exc = await send(client, f"early:{what}")
                    assert_seen(binding, what, exc)
                again = request("ok")
                first = [event async for event in client.send_message(again)]
                second = [event async for event in client.send_message(again)]
                assert first[-1].task.id == second[-1].task.id


async def test_an_unexpected_exception_is_logged_once_with_its_correlation_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One traceback line of ours per unexpected exception, holding the id the client got."""
    caplog.set_level(logging.ERROR, logger="a2a_client_errors.server")
    async with (
        running() as (_, agent_card),
        sdk_client(agent_card, "jsonrpc", streaming=False) as client,
    ):
        _, exc = await send(client, "early:BUG")
    assert isinstance(exc, InternalError)
    ours = [r for r in caplog.records if r.name == "a2a_client_errors.server"]
    assert len(ours) == 1
    assert exc.data is not None
    assert ours[0].correlation_id == exc.data["correlationId"]  # type: ignore[attr-defined]
    assert ours[0].exc_info is not None
    assert SECRET in str(ours[0].exc_info[1])  # the original, on the server only

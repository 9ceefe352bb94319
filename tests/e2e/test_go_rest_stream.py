"""a2a-sdk 1.x's REST client against an agent that refuses a stream as a2a-go does.

a2a-go 2.3.1 answers an HTTP+JSON stream it refuses before its first event with
``200 text/event-stream`` and one ``data: {"error": ...}`` event without an event name
(`tests.dialects.a2a_go_rest_stream_error`). a2a-sdk 1.3's REST stream
parser reads that event as an empty ``StreamResponse``; `guard_client` reads the bytes itself
and raises the decision they carry: `DegradeNeeded`, with `AsyncGuardTransport` under the
client's httpx client or without it (never `RetryExhausted`, an interruption of a task that
does not exist).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

pytest.importorskip("a2a.types.a2a_pb2", reason="the a2a-sdk 1.x client")

from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from a2a_client_errors import (
    AsyncGuardTransport,
    DegradeNeeded,
    Guard,
    Reason,
)
from a2a_client_errors.integrations.a2a_sdk import guard_client
from tests.asgi import serve
from tests.dialects import a2a_go_rest_stream_error

if TYPE_CHECKING:
    from collections.abc import Iterator

    from starlette.requests import Request

pytestmark = pytest.mark.e2e


async def _refuse_stream(request: Request) -> Response:
    """a2a-go's answer: the stream opens, and its one event is the error."""
    return Response(a2a_go_rest_stream_error(), media_type="text/event-stream")


@pytest.fixture(name="go_agent")
def go_agent_fixture() -> Iterator[str]:
    """An agent on 127.0.0.1 that refuses every stream as a2a-go's HTTP+JSON binding does."""
    app = Starlette(routes=[Route("/message:stream", _refuse_stream, methods=["POST"])])
    with serve(app) as url:
        yield url


def _card(url: str) -> a2a_pb2.AgentCard:
    interface = a2a_pb2.AgentInterface(
        url=url, protocol_binding="HTTP+JSON", protocol_version="1.0"
    )
    return a2a_pb2.AgentCard(
        name="go-agent",
        supported_interfaces=[interface],
        capabilities=a2a_pb2.AgentCapabilities(streaming=True),
    )


def _request() -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id="m-1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hi")]
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def _send(url: str, transport: httpx.AsyncBaseTransport | None, guard: Guard) -> None:
    async with httpx.AsyncClient(transport=transport, timeout=10) as http:
        config = ClientConfig(
            streaming=True,
            httpx_client=http,
            supported_protocol_bindings=[TransportProtocol.HTTP_JSON],
        )
        client = guard_client(ClientFactory(config).create(_card(url)), guard, handlers=None)
        async for _ in client.send_message(_request()):
            pass


async def test_the_refusal_read_from_the_bytes_is_degrade(go_agent: str) -> None:
    """AsyncGuardTransport(raise_failures=True) under the client: DegradeNeeded, one request."""
    guard = Guard(sleep=lambda _: None)
    transport = AsyncGuardTransport(guard, raise_failures=True)
    with pytest.raises(DegradeNeeded) as failed:
        await _send(go_agent, transport, guard)
    assert failed.value.decision.reason is Reason.UNSUPPORTED_OPERATION


async def test_without_the_transport_guard_client_reads_the_bytes(go_agent: str) -> None:
    """No transport of ours: guard_client reads the refusal a2a-sdk made an empty event of."""
    with pytest.raises(DegradeNeeded) as failed:
        await _send(go_agent, None, Guard(sleep=lambda _: None))
    assert failed.value.decision.reason is Reason.UNSUPPORTED_OPERATION

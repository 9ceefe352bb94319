"""a2a-sdk 0.3's own client against the 0.3 agent, for the tests here."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TextPart, TransportProtocol

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from a2a.client import Client

    from tests.agent03 import Running03

BINDINGS = {
    "jsonrpc": TransportProtocol.jsonrpc,
    "rest": TransportProtocol.http_json,
    "grpc": TransportProtocol.grpc,
}


def message(text: str, *, message_id: str | None = None, task_id: str | None = None) -> Message:
    """A user message with one text part (a new messageId unless one is given)."""
    return Message(
        role=Role.user,
        message_id=message_id or uuid.uuid4().hex,
        parts=[Part(root=TextPart(text=text))],
        task_id=task_id,
    )


@contextlib.asynccontextmanager
async def client03(
    running: Running03,
    binding: str,
    *,
    streaming: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
    card: Any = None,
) -> AsyncIterator[Client]:
    """A 0.3 ``Client`` on one binding (``jsonrpc``, ``rest`` or ``grpc``), closed after."""
    async with httpx.AsyncClient(timeout=10.0, transport=transport) as http:
        config = ClientConfig(
            streaming=streaming,
            httpx_client=http,
            grpc_channel_factory=grpc.aio.insecure_channel,
            supported_transports=[BINDINGS[binding]],
        )
        client = ClientFactory(config).create(card if card is not None else running.card)
        try:
            yield client
        finally:
            await client.close()


async def send(client: Client, text: str, **fields: Any) -> Any:
    """Send one message; the last thing the client yields (a Task, or a Message)."""
    last: Any = None
    async for event in client.send_message(message(text, **fields)):
        last = event
    return last[0] if isinstance(last, tuple) else last

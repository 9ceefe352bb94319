"""A card that claims streaming on a peer that refuses it: the stream degrades to send and poll.

The embedded a2a-sdk peer on 127.0.0.1 runs with streaming off; the client is built from a
copy of its card that says ``capabilities.streaming = true``, so a2a-sdk opens a stream. The
peer refuses it with UNSUPPORTED_OPERATION; the default decision handlers send the message
again without streaming and poll its task with GetTask until it is final. The caller still
iterates one stream and gets the task, COMPLETED.

Run it with ``python examples/streaming_degrade.py``.
"""

from __future__ import annotations

import asyncio
import json

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.testing.peer import EmbeddedPeer


class Methods(httpx.AsyncBaseTransport):
    """Forwards every request; keeps the JSON-RPC method each one called."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record the method, then forward."""
        body = await request.aread()
        if body.startswith(b"{"):
            self.methods.append(str(json.loads(body).get("method")))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the forwarding transport."""
        await self.inner.aclose()


async def stream_to_a_peer_that_cannot(peer: EmbeddedPeer) -> None:
    """Send a streaming message with a card that overclaims; check the degraded outcome."""
    card = a2a_pb2.AgentCard()
    card.CopyFrom(peer.agent_card)
    card.capabilities.streaming = True  # the card says so; the server says no
    methods = Methods()
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}, transport=methods)
    config = ClientConfig(
        streaming=True,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    recorder = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[recorder])
    client = guard_client(ClientFactory(config).create(card), guard)
    message = a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")])
    try:
        events = [e async for e in client.send_message(a2a_pb2.SendMessageRequest(message=message))]
    finally:
        await client.close()
        await http.aclose()

    first = recorder.decisions[0].decision
    states = [a2a_pb2.TaskState.Name(event.task.status.state) for event in events]
    print(f"the stream was refused: {first.reason} -> action {first.action.value}")
    print(f"requests sent: {' -> '.join(methods.methods)}")
    print(f"events the caller read: {len(events)} task(s), states {states}")
    assert first.action.value == "degrade"
    assert first.reason == "UNSUPPORTED_OPERATION"
    assert methods.methods[0] == "SendStreamingMessage"
    assert methods.methods[1] == "SendMessage"
    assert all(event.WhichOneof("payload") == "task" for event in events)
    assert states[-1] == "TASK_STATE_COMPLETED"


def main() -> None:
    """Start a peer without streaming, run the flow, stop the peer."""
    with EmbeddedPeer(streaming=False) as peer:
        asyncio.run(stream_to_a_peer_that_cannot(peer))
    print("ok: the refused stream was sent again without streaming and polled to COMPLETED")


if __name__ == "__main__":
    main()

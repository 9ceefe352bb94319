"""A2A-Version negotiation: an older version is upgraded once, a newer one never downgraded.

Against an embedded a2a-sdk peer on 127.0.0.1 that speaks A2A 1.0, the guarded a2a-sdk client:

1. sends a message with ``A2A-Version: 0.3``: refused with VERSION_NOT_SUPPORTED; the agent
   card is read again, and the message resent once with 1.0 (the best version both sides
   speak), and it completes;
2. asks for a task with ``A2A-Version: 99.0``: 1.0 would be a downgrade, so the failure stands
   (`FixRequestNeeded`), nothing is resent;
3. does the same with ``DecisionHandlers(allow_downgrade=True)``: resent once with 1.0, and the
   peer's real answer (TASK_NOT_FOUND) comes back.

Run it with ``python examples/version_negotiation.py``.
"""

from __future__ import annotations

import asyncio

import grpc.aio
import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import FixRequestNeeded, Guard, ReconcileNeeded
from a2a_client_errors.integrations.a2a_sdk import DecisionHandlers, GuardedClient, guard_client
from a2a_client_errors.testing.peer import EmbeddedPeer


class Versions(httpx.AsyncBaseTransport):
    """Forwards every request; keeps the A2A-Version of each call, and counts card reads."""

    def __init__(self) -> None:
        self.sent: list[str | None] = []
        self.cards_read = 0
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record, then forward."""
        if request.url.path == "/.well-known/agent-card.json":
            self.cards_read += 1
        else:
            self.sent.append(request.headers.get("A2A-Version"))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the forwarding transport."""
        await self.inner.aclose()


def _client(peer: EmbeddedPeer, http: httpx.AsyncClient) -> GuardedClient:
    config = ClientConfig(
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    return guard_client(ClientFactory(config).create(peer.agent_card), Guard(sleep=lambda _: None))


def _version(value: str) -> ClientCallContext:
    return ClientCallContext(service_parameters={"A2A-Version": value})


async def upgrade(peer: EmbeddedPeer) -> None:
    """0.3 refused: resent once with 1.0."""
    versions = Versions()
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}, transport=versions)
    client = _client(peer, http)
    message = a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")])
    request = a2a_pb2.SendMessageRequest(message=message)
    try:
        events = [e async for e in client.send_message(request, context=_version("0.3"))]
    finally:
        await client.close()
        await http.aclose()
    last = events[-1]
    state = a2a_pb2.TaskState.Name(
        last.task.status.state if last.HasField("task") else last.status_update.status.state
    )
    print(
        f"A2A-Version 0.3: versions sent {versions.sent}, agent card read again "
        f"{versions.cards_read} time(s), the task ended {state}"
    )
    assert versions.sent == ["0.3", "1.0"]
    assert versions.cards_read == 1
    assert state == "TASK_STATE_COMPLETED"


async def no_silent_downgrade(peer: EmbeddedPeer) -> None:
    """99.0 refused: 1.0 is older, so FixRequestNeeded is raised and nothing is resent."""
    versions = Versions()
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}, transport=versions)
    client = _client(peer, http)
    refused: FixRequestNeeded | None = None
    try:
        await client.get_task(a2a_pb2.GetTaskRequest(id="t-1"), context=_version("99.0"))
    except FixRequestNeeded as failed:
        refused = failed
    finally:
        await client.close()
        await http.aclose()
    assert refused is not None, "a request for 99.0 was downgraded silently"
    print(f"A2A-Version 99.0: versions sent {versions.sent}, raised FixRequestNeeded")
    print(f"  reason {refused.reason}, after {refused.attempts} attempt(s)")
    assert refused.reason == "VERSION_NOT_SUPPORTED"
    assert versions.sent == ["99.0"]


async def allowed_downgrade(peer: EmbeddedPeer) -> None:
    """99.0 refused, downgrade allowed: resent once with 1.0; the task does not exist."""
    versions = Versions()
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}, transport=versions)
    client = _client(peer, http)
    client.handlers = DecisionHandlers(allow_downgrade=True)
    answered: ReconcileNeeded | None = None
    try:
        await client.get_task(a2a_pb2.GetTaskRequest(id="no-such-task"), context=_version("99.0"))
    except ReconcileNeeded as failed:  # 1.0 was understood: the peer knows no such task
        answered = failed
    finally:
        await client.close()
        await http.aclose()
    assert answered is not None, "GetTask of an unknown task succeeded"
    print(f"A2A-Version 99.0, downgrade allowed: versions sent {versions.sent}")
    print(f"  the peer's answer in 1.0: {answered.reason}")
    assert answered.reason == "TASK_NOT_FOUND"
    assert versions.sent == ["99.0", "1.0"]


async def negotiate(peer: EmbeddedPeer) -> None:
    """The three cases, one after the other."""
    await upgrade(peer)
    await no_silent_downgrade(peer)
    await allowed_downgrade(peer)


def main() -> None:
    """Start a peer, run the three cases, stop the peer."""
    with EmbeddedPeer() as peer:
        asyncio.run(negotiate(peer))
    print("ok: upgraded once, never downgraded unless allowed")


if __name__ == "__main__":
    main()

"""An agent whose JSON-RPC endpoint is down: served over HTTP+JSON, then back over JSON-RPC.

An embedded a2a-sdk peer on 127.0.0.1 serves JSON-RPC and HTTP+JSON; its card's JSON-RPC
interface is reached through a loopback proxy that goes down (connections refused) and comes
back. The guarded client speaks both bindings: a call that cannot reach JSON-RPC is sent, the
same message, over HTTP+JSON (on another origin than the proxy's, so the client names it in
``failover_origins``: its credentials may go there); once JSON-RPC's breaker has opened,
calls go straight to HTTP+JSON; after the cool-down one probe finds JSON-RPC back and calls
return to it. The clock is a fake one, so the cool-down passes at once.

Run it with ``python examples/failover.py``.
"""

from __future__ import annotations

import asyncio

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCard, a2a_pb2

from a2a_client_errors import CircuitBreaker, Guard
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guard_client
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.testing.lossy import LossyProxy
from a2a_client_errors.testing.peer import EmbeddedPeer


def card_through(peer: EmbeddedPeer, proxy: LossyProxy) -> AgentCard:
    """The peer's card: JSON-RPC through the proxy, HTTP+JSON direct (gRPC left out)."""
    card = AgentCard()
    card.CopyFrom(peer.agent_card)
    kept = [i for i in card.supported_interfaces if i.protocol_binding != "GRPC"]
    for interface in kept:
        if interface.protocol_binding == "JSONRPC":
            url = httpx.URL(interface.url)
            interface.url = str(url.copy_with(port=httpx.URL(proxy.url).port))
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(kept)
    return card


async def send(client: GuardedClient, text: str) -> str:
    """Send one message; say which interface served it."""
    message = a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)])
    request = a2a_pb2.SendMessageRequest(message=message)
    events = [event async for event in client.send_message(request)]
    assert events, "a task came back"
    assert client.serving is not None
    return client.serving.binding


async def run(peer: EmbeddedPeer, proxy: LossyProxy) -> None:
    """Down, failed over, breaker open, back."""
    clock, recorder = FakeClock(), RecordingHook()
    breaker = CircuitBreaker(min_calls=3, cooldown=5.0, clock=clock.now)
    guard = Guard(breaker=breaker, clock=clock.now, sleep=clock.sleep, hooks=[recorder])
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
    config = ClientConfig(
        streaming=False, httpx_client=http, supported_protocol_bindings=["JSONRPC", "HTTP+JSON"]
    )
    client = guard_client(
        ClientFactory(config).create(card_through(peer, proxy)),
        guard,
        failover_origins={peer.rest_url},  # the agent's own origin, beside the proxy's
    )
    before = len(peer.task_ids())
    try:
        print("interfaces:", ", ".join(str(i) for i in client.interfaces))
        print("send 1, all up:", await send(client, "one"))
        proxy.down()
        for n in range(2, 6):
            print(f"send {n}, JSON-RPC down:", await send(client, f"message {n}"))
        proxy.up()
        clock.advance(5.0)
        print("send 6, JSON-RPC back after the cool-down:", await send(client, "six"))
    finally:
        await client.close()
        await http.aclose()
    whys = [event.why for event in recorder.failovers]
    print("moves:", ", ".join(whys))
    print("tasks made:", len(peer.task_ids()) - before, "for 6 sends")
    assert whys == ["not_sent", "not_sent", "breaker_open", "breaker_open"]
    assert len(peer.task_ids()) - before == 6


def main() -> None:
    """Start a peer and a proxy, run the flow, stop both."""
    with EmbeddedPeer() as peer, LossyProxy(peer.http_target) as proxy:
        asyncio.run(run(peer, proxy))
    print("ok: one task per send, whichever interface served it")


if __name__ == "__main__":
    main()

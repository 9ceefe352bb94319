"""a2a-sdk clients against the embedded peer, guarded, for the end-to-end tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guard_client

if TYPE_CHECKING:
    from a2a_client_errors.testing.peer import EmbeddedPeer

PROTOCOLS = {
    "jsonrpc": TransportProtocol.JSONRPC,
    "rest": TransportProtocol.HTTP_JSON,
    "grpc": TransportProtocol.GRPC,
}
BINDINGS = list(PROTOCOLS)


async def sdk_client(
    peer: EmbeddedPeer,
    binding: str,
    *,
    streaming: bool = True,
    transport: httpx.AsyncBaseTransport | None = None,
    guard: Guard | None = None,
    raw: bool = False,
    card: Any = None,
    timeout: float = 10.0,
    also: tuple[str, ...] = (),
    failover_origins: tuple[str, ...] = (),
) -> tuple[GuardedClient, httpx.AsyncClient]:
    """A guarded a2a-sdk client on one binding, and the httpx client to close after it.

    Args:
        peer: the peer.
        binding: ``"jsonrpc"``, ``"rest"`` or ``"grpc"``.
        streaming: the client's own streaming setting.
        transport: the httpx transport under the client (to record or to fail requests).
        guard: the Guard (default: one that never sleeps).
        raw: no decision handlers: every decision but ok and retry is raised.
        card: the card to build the client from (default: the peer's own).
        timeout: the httpx timeout.
        also: other bindings the client may speak (its card's other interfaces).
        failover_origins: other origins calls may fail over to.
    """
    http = httpx.AsyncClient(timeout=timeout, headers={"A2A-Version": "1.0"}, transport=transport)
    config = ClientConfig(
        streaming=streaming,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[PROTOCOLS[b] for b in (binding, *also)],
    )
    client = ClientFactory(config).create(card if card is not None else peer.agent_card)
    chosen = guard or Guard(sleep=lambda _: None)
    handlers: Any = {"handlers": None} if raw else {}
    return guard_client(client, chosen, failover_origins=failover_origins, **handlers), http

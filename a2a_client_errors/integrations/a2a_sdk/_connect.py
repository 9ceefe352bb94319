"""Nothing sent over a gRPC interface whose channel cannot connect.

a2a-sdk's gRPC transport turns grpcio's UNAVAILABLE into an ``A2AClientError`` whatever caused
it, and grpcio's error for a channel that cannot connect (nothing sent) is the same as its
error for a connection that broke after the request went out (maybe processed): the same code,
no details, no metadata. So the guarded client waits for the channel's connection before each
attempt over gRPC (`connect_first`), as gRPC itself would before making the call; a channel
that cannot connect fails the attempt with
`a2a_client_errors.integrations.grpc.NotConnectedError`, *not sent*, before a2a-sdk is called:
the call is retried, or goes over the agent's next interface, never looked up as unknown.

Other bindings, and clients that are not a2a-sdk's, go through untouched. grpcio is imported
only for a client that calls over a gRPC channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a_client_errors.integrations.a2a_sdk._compat import base_transport

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["connect_first", "connecting", "grpc_channel_of"]


def grpc_channel_of(client: Any) -> Any:
    """The ``grpc.aio`` channel an a2a-sdk client calls over, or None (another binding).

    Args:
        client: an a2a-sdk ``Client`` (its transport may sit under a tenant decorator).

    Returns:
        The transport's channel when it has one whose connectivity can be read
        (``get_state`` and ``wait_for_state_change``), else None.

    """
    channel = getattr(base_transport(client), "channel", None)
    if callable(getattr(channel, "get_state", None)) and callable(
        getattr(channel, "wait_for_state_change", None)
    ):
        return channel
    return None


async def connect_first(client: Any) -> None:
    """Before an attempt: wait for the client's gRPC channel to connect, if it calls over one.

    Args:
        client: the a2a-sdk ``Client`` the attempt goes through.

    Raises:
        a2a_client_errors.integrations.grpc.NotConnectedError: the channel could not connect;
            nothing was sent (`a2a_client_errors.integrations.grpc.connect`). The wait has no
            time limit of its own: the Guard's deadline cuts it short (an attempt cut short is
            *unknown*), and gRPC ends a connection attempt after 20 s.

    """
    channel = grpc_channel_of(client)
    if channel is None:
        return
    from a2a_client_errors.integrations.grpc import connect  # noqa: PLC0415 (grpcio: optional)

    await connect(channel)


def connecting(client: Any, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``method`` of ``client``, each call of which waits for the channel first (`connect_first`).

    Args:
        client: the a2a-sdk ``Client`` whose channel is waited for.
        method: the call to make once it is connected (one of the client's methods).

    """

    async def call(*args: Any, **kwargs: Any) -> Any:
        await connect_first(client)
        return await method(*args, **kwargs)

    return call

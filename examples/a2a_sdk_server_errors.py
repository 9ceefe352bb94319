"""An agent built on a2a-sdk's own server raises `A2AError`; a2a-sdk's client reads it, 3 ways.

The executor refuses every message with VERSION_NOT_SUPPORTED (its metadata names the
versions it serves) and breaks, with a secret in the exception, on the text ``bug``. The
handler is a2a-sdk's ``DefaultRequestHandler`` wrapped by `with_a2a_errors`, served by
a2a-sdk's JSON-RPC and REST routes under uvicorn and by its ``GrpcHandler`` on ``grpc.aio``,
all on 127.0.0.1. a2a-sdk's client, on each binding, sees ``VersionNotSupportedError`` (not
-32603, not a 500 "unknown exception", not UNKNOWN), and ``InternalError`` with a correlation
id for the bug; the secret stays in the server's log.

Run it with ``python examples/a2a_sdk_server_errors.py``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import uuid
from typing import TYPE_CHECKING

import grpc.aio
import httpx
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    a2a_pb2,
    a2a_pb2_grpc,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import InternalError, VersionNotSupportedError
from starlette.applications import Starlette

from a2a_client_errors import A2AError, Reason
from a2a_client_errors.server import with_a2a_errors

if TYPE_CHECKING:
    from a2a.server.events import EventQueue


class Refusing(AgentExecutor):
    """Refuses every message with VERSION_NOT_SUPPORTED; ``bug`` makes it break instead."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Raise."""
        if context.get_user_input() == "bug":
            raise RuntimeError("lost the database password=hunter2")
        raise A2AError(Reason.VERSION_NOT_SUPPORTED, "this agent serves 2.0", {"supported": "2.0"})

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing to cancel."""


def agent_card(base_url: str, grpc_target: str) -> AgentCard:
    """The card: the three bindings."""
    interfaces = [
        AgentInterface(
            url=f"{base_url}/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"
        ),
        AgentInterface(
            url=f"{base_url}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"
        ),
        AgentInterface(url=grpc_target, protocol_binding="GRPC", protocol_version="1.0"),
    ]
    return AgentCard(
        name="refusing agent",
        description="Refuses.",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="refuse", name="refuse", description="Refuses.", tags=["x"])],
    )


async def call(card: AgentCard, binding: str, text: str) -> Exception:
    """Send ``text`` with a2a-sdk's client on ``binding``; the exception it raised."""
    protocol = {"jsonrpc": TransportProtocol.JSONRPC, "rest": TransportProtocol.HTTP_JSON}
    async with httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}) as http:
        config = ClientConfig(
            httpx_client=http,
            grpc_channel_factory=grpc.aio.insecure_channel,
            supported_protocol_bindings=[protocol.get(binding, TransportProtocol.GRPC)],
        )
        client = ClientFactory(config).create(card)
        message = a2a_pb2.Message(
            message_id=str(uuid.uuid4()),
            role=a2a_pb2.Role.ROLE_USER,
            parts=[a2a_pb2.Part(text=text)],
        )
        try:
            async for _ in client.send_message(a2a_pb2.SendMessageRequest(message=message)):
                pass
        except Exception as exc:  # what the client raised is what the example shows
            return exc
        finally:
            await client.close()
    raise AssertionError("the agent answered")


async def main() -> None:
    """Serve on 127.0.0.1, call each binding, check, stop."""
    logging.basicConfig(level=logging.CRITICAL)  # the server's own log lines are not the point
    handler = with_a2a_errors(
        DefaultRequestHandler(
            agent_executor=Refusing(),
            task_store=InMemoryTaskStore(),
            agent_card=agent_card("http://127.0.0.1", "127.0.0.1:0"),
        )
    )
    app = Starlette(
        routes=[
            *create_jsonrpc_routes(handler, rpc_url="/jsonrpc"),
            *create_rest_routes(handler, path_prefix="/rest"),
        ]
    )
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    http_server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(
        target=lambda: asyncio.run(http_server.serve(sockets=[listening])), daemon=True
    )
    thread.start()
    grpc_server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
    port = grpc_server.add_insecure_port("127.0.0.1:0")
    await grpc_server.start()
    card = agent_card(f"http://127.0.0.1:{listening.getsockname()[1]}", f"127.0.0.1:{port}")
    try:
        for binding in ("jsonrpc", "rest", "grpc"):
            refused = await call(card, binding, "hello")
            assert isinstance(refused, VersionNotSupportedError), refused
            assert refused.message == "this agent serves 2.0"
            if binding != "grpc":  # a2a-sdk's gRPC client keeps no ErrorInfo metadata
                assert refused.data == {"supported": "2.0"}
            broken = await call(card, binding, "bug")
            assert isinstance(broken, InternalError), broken
            assert "hunter2" not in repr(broken)
            print(f"{binding:8} {type(refused).__name__}: {refused.message} | {broken.message}")
    finally:
        await asyncio.wait_for(grpc_server.stop(0.5), 5)
        http_server.should_exit = True
        thread.join(timeout=10)
        listening.close()


if __name__ == "__main__":
    asyncio.run(main())

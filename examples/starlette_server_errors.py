"""A Starlette JSON-RPC agent of your own, behind `A2AErrorMiddleware`, read by a2a-sdk's client.

The endpoint serves SendMessage: a message naming a task it does not know raises
TASK_NOT_FOUND (an `A2AError`), the text ``bug`` breaks it (a secret in the exception), any
other message gets a Message back. Under uvicorn on 127.0.0.1, a2a-sdk's client, over one
pooled connection, sees ``TaskNotFoundError`` with its metadata, ``InternalError`` with a
correlation id, and then a plain answer: the connection served every call (the middleware
answers without re-raising, so uvicorn neither closes it nor logs a traceback).

Run it with ``python examples/starlette_server_errors.py``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from typing import Any

import httpx
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, a2a_pb2
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import InternalError, TaskNotFoundError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a_client_errors import A2AError, Reason
from a2a_client_errors.server import A2AErrorMiddleware

connections: set[tuple[str, int]] = set()


async def rpc(request: Any) -> JSONResponse:
    """SendMessage: TASK_NOT_FOUND for a taskId, a bug on ``bug``, else a Message."""
    connections.add(tuple(request.scope["client"]))
    call = await request.json()
    message = call["params"]["message"]
    if message.get("taskId"):
        raise A2AError(Reason.TASK_NOT_FOUND, "no such task", {"taskId": message["taskId"]})
    if message["parts"][0].get("text") == "bug":
        raise RuntimeError("the cache said token=abc123")
    reply = {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}
    return JSONResponse({"jsonrpc": "2.0", "id": call["id"], "result": {"message": reply}})


app = Starlette(
    routes=[Route("/", rpc, methods=["POST"])],
    middleware=[Middleware(A2AErrorMiddleware, binding="jsonrpc")],
)


async def send(client: Any, text: str, task_id: str = "") -> Exception | None:
    """SendMessage through a2a-sdk's client; the exception it raised, or None."""
    message = a2a_pb2.Message(
        message_id=str(uuid.uuid4()),
        role=a2a_pb2.Role.ROLE_USER,
        parts=[a2a_pb2.Part(text=text)],
        task_id=task_id,
    )
    try:
        async for _ in client.send_message(a2a_pb2.SendMessageRequest(message=message)):
            pass
    except Exception as exc:  # what the client raised is what the example shows
        return exc
    return None


async def main() -> None:
    """Serve on 127.0.0.1, call, check, stop."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[listening])))
    thread.start()
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/"
    card = AgentCard(
        name="own agent",
        description="Starlette.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
    )
    http = httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_connections=1))
    config = ClientConfig(
        streaming=False, httpx_client=http, supported_protocol_bindings=[TransportProtocol.JSONRPC]
    )
    client = ClientFactory(config).create(card)
    try:
        for _ in range(5):
            missing = await send(client, "status?", task_id="t-404")
            assert isinstance(missing, TaskNotFoundError), missing
            assert missing.data == {"taskId": "t-404"}
            broken = await send(client, "bug")
            assert isinstance(broken, InternalError), broken
            assert "abc123" not in repr(broken)
            assert await send(client, "hello") is None
        assert len(connections) == 1, connections  # 15 calls, one connection
        print(f"TaskNotFoundError {missing.data}; {broken.message}; 15 calls, one connection")
    finally:
        await client.close()
        await http.aclose()
        server.should_exit = True
        thread.join(timeout=10)
        listening.close()


if __name__ == "__main__":
    asyncio.run(main())

"""A grpc.aio servicer of your own, behind `A2AErrorInterceptor`, read by a2a-sdk's client.

The servicer's GetTask raises TASK_NOT_FOUND (an `A2AError`) for an unknown id and breaks
(a secret in the exception) on ``bug``; its SendStreamingMessage sends the task, then raises
UNSUPPORTED_OPERATION. a2a-sdk's gRPC client on 127.0.0.1 sees ``TaskNotFoundError``,
``InternalError`` with a correlation id, and, after the stream's first event,
``UnsupportedOperationError``; a raw stub reads the ErrorInfo's metadata from the trailer.

Run it with ``python examples/grpc_server_errors.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import grpc.aio
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, a2a_pb2, a2a_pb2_grpc
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import InternalError, TaskNotFoundError, UnsupportedOperationError

from a2a_client_errors import A2AError, Reason, normalize
from a2a_client_errors.server import A2AErrorInterceptor


class Agent(a2a_pb2_grpc.A2AServiceServicer):  # type: ignore[misc]
    """GetTask and SendStreamingMessage, both failing."""

    async def GetTask(self, request: Any, context: Any) -> Any:  # noqa: N802
        """Unknown task, or a bug."""
        if request.id == "bug":
            raise RuntimeError("connection string postgres://admin:s3cret@db")
        raise A2AError(Reason.TASK_NOT_FOUND, "no such task", {"taskId": request.id})

    async def SendStreamingMessage(self, request: Any, context: Any) -> Any:  # noqa: N802
        """The task, then UNSUPPORTED_OPERATION."""
        yield a2a_pb2.StreamResponse(task=a2a_pb2.Task(id="t-1", context_id="c-1"))
        raise A2AError(Reason.UNSUPPORTED_OPERATION, "this task cannot take more input")


async def failure(call: Any) -> Exception:
    """Run ``call``; the exception it raised."""
    try:
        await call
    except Exception as exc:  # what the client raised is what the example shows
        return exc
    raise AssertionError("no error")


async def main() -> None:
    """Serve on 127.0.0.1, call, check, stop."""
    server = grpc.aio.server(interceptors=[A2AErrorInterceptor()])
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(Agent(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    card = AgentCard(
        name="own agent",
        description="grpc.aio.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"127.0.0.1:{port}", protocol_binding="GRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
    )
    config = ClientConfig(
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.GRPC],
    )
    client = ClientFactory(config).create(card)
    try:
        missing = await failure(client.get_task(a2a_pb2.GetTaskRequest(id="t-404")))
        assert isinstance(missing, TaskNotFoundError), missing
        broken = await failure(client.get_task(a2a_pb2.GetTaskRequest(id="bug")))
        assert isinstance(broken, InternalError), broken
        assert "s3cret" not in repr(broken)
        events: list[Any] = []
        message = a2a_pb2.Message(
            message_id=str(uuid.uuid4()),
            role=a2a_pb2.Role.ROLE_USER,
            parts=[a2a_pb2.Part(text="x")],
        )

        async def stream() -> None:
            async for event in client.send_message(a2a_pb2.SendMessageRequest(message=message)):
                events.append(event)  # noqa: PERF401 (the stream fails part-way)

        stopped = await failure(stream())
        assert isinstance(stopped, UnsupportedOperationError), stopped
        assert len(events) == 1  # the task came first
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            rpc = await failure(stub.GetTask(a2a_pb2.GetTaskRequest(id="t-9"), timeout=10))
            assert isinstance(rpc, grpc.aio.AioRpcError)
            error = normalize(rpc)
            assert error is not None
            assert dict(error.metadata) == {"taskId": "t-9"}
        print(f"{type(missing).__name__}; {broken.message}; {type(stopped).__name__} after 1 event")
    finally:
        await client.close()
        await asyncio.wait_for(server.stop(0.5), 5)


if __name__ == "__main__":
    asyncio.run(main())

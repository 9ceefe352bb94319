"""Version negotiation over gRPC against an agent that reads ``a2a-version`` as one string.

a2a-sdk's gRPC transport sends ``a2a-version: 1.0`` and then appends the call's own service
parameters, so an agent that joins the metadata (as the JavaScript SDK does) reads
``"1.0, 0.3"`` and refuses it, and after the fix ``"1.0, 1.0"``. A ``grpc.aio`` interceptor on
the real a2a-sdk agent plays that agent: it refuses every call whose ``a2a-version`` is not
exactly ``"1.0"`` with VERSION_NOT_SUPPORTED (its ErrorInfo in the trailer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import pytest
from a2a.client import ClientCallContext
from a2a.types import a2a_pb2
from grpc_status import rpc_status

from a2a_client_errors import A2AError, Guard, Reason, ReconcileNeeded, to_grpc
from a2a_client_errors.testing.peer import EmbeddedPeer
from tests.e2e.lossy import COMPLETED, sdk_state, send_request
from tests.e2e.sdk import sdk_client

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.e2e


class ExactVersion(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Refuses a call unless its ``a2a-version`` metadata, joined, is exactly "1.0"."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        """Pass a call whose version reads "1.0"; answer any other with the A2A error."""
        handler = await continuation(details)
        values = [value for key, value in details.invocation_metadata if key == "a2a-version"]
        version = ", ".join(values)
        self.seen.append(version)
        if handler is None or version == "1.0":
            return handler
        status = rpc_status.to_status(
            to_grpc(A2AError(Reason.VERSION_NOT_SUPPORTED, f"only 1.0, not {version!r}"))
        )

        async def refuse(request: Any, context: Any) -> Any:
            await context.abort_with_status(status)

        async def refuse_stream(request: Any, context: Any) -> Any:
            await context.abort_with_status(status)
            yield  # an async generator, for the stream's handler

        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                refuse,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return grpc.unary_stream_rpc_method_handler(
            refuse_stream,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


@pytest.fixture(scope="module")
def exact() -> ExactVersion:
    """The interceptor of the module's agent."""
    return ExactVersion()


@pytest.fixture(scope="module")
def strict_agent(exact: ExactVersion) -> Iterator[EmbeddedPeer]:
    """An agent whose gRPC binding compares the version header as a string."""
    with EmbeddedPeer(grpc_interceptors=(exact,)) as running:
        yield running


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_the_version_header_is_set_never_appended(
    strict_agent: EmbeddedPeer, exact: ExactVersion, streaming: bool
) -> None:
    """The call names 1.0 itself: the agent reads "1.0", not "1.0, 1.0"."""
    exact.seen.clear()
    client, http = await sdk_client(
        strict_agent, "grpc", guard=Guard(sleep=lambda _: None), streaming=streaming
    )
    context = ClientCallContext(service_parameters={"A2A-Version": "1.0"})
    try:
        events = [e async for e in client.send_message(send_request(), context=context)]
    finally:
        await client.close()
        await http.aclose()
    assert sdk_state(events[-1]) == COMPLETED
    assert exact.seen == ["1.0"]


async def test_a_refused_version_is_negotiated_over_grpc(
    strict_agent: EmbeddedPeer, exact: ExactVersion
) -> None:
    """0.3 refused: the handler resends with 1.0 from the card, read as "1.0" exactly."""
    exact.seen.clear()
    client, http = await sdk_client(strict_agent, "grpc", guard=Guard(sleep=lambda _: None))
    context = ClientCallContext(service_parameters={"A2A-Version": "0.3"})
    try:
        # The resend reached the agent: TASK_NOT_FOUND for the unknown task, not a version.
        with pytest.raises(ReconcileNeeded) as raised:
            await client.get_task(a2a_pb2.GetTaskRequest(id="no-such-task"), context=context)
    finally:
        await client.close()
        await http.aclose()
    assert raised.value.reason is Reason.TASK_NOT_FOUND
    assert exact.seen == ["0.3", "1.0"]

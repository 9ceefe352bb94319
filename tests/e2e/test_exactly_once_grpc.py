"""Exactly one task per send through `guard_client` over gRPC, whatever answers are lost.

A ``grpc.aio`` server interceptor on the real a2a-sdk agent lets SendMessage (or
SendStreamingMessage) run to the end, the task made and stored, and then throws the answer
away: the client gets a bare UNAVAILABLE, as when the connection breaks after the agent did
the work. The tasks the agent holds are counted before and after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import pytest
from a2a.client import ClientCallContext
from a2a.types import a2a_pb2

from a2a_client_errors import ExactlyOnce, Guard, OutcomeUnknown
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.testing.peer import EmbeddedPeer
from a2a_client_errors.types import Resolution
from tests.e2e.lossy import (
    CANCELED,
    COMPLETED,
    Unknowns,
    new_tasks,
    sdk_state,
    sdk_task_ids,
    send_request,
)
from tests.e2e.sdk import sdk_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.e2e

_SENDS = ("/SendMessage", "/SendStreamingMessage")


class LoseAnswers(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Aborts the first ``armed`` sends with a bare UNAVAILABLE.

    After running them in full (``mode`` "lose"), or before they reach the agent ("drop").
    """

    def __init__(self) -> None:
        self.mode = "lose"
        self.armed = 0
        self.sends = 0
        self.lost = 0

    def _lose(self) -> bool:
        self.sends += 1
        if self.armed > 0:
            self.armed -= 1
            self.lost += 1
            return True
        return False

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        """Wrap the send handlers; pass every other method on."""
        handler = await continuation(details)
        if handler is None or not details.method.endswith(_SENDS):
            return handler
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return grpc.unary_stream_rpc_method_handler(
            self._stream(handler.unary_stream),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _unary(self, inner: Any) -> Any:
        async def unary(request: Any, context: Any) -> Any:
            lose = self._lose()
            if lose and self.mode == "drop":
                await context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            response = await inner(request, context)
            if lose:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            return response

        return unary

    def _stream(self, inner: Any) -> Any:
        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            lose = self._lose()
            if lose and self.mode == "drop":
                await context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            async for response in inner(request, context):
                if not lose:
                    yield response
            if lose:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")

        return stream


@pytest.fixture(scope="module")
def losing() -> LoseAnswers:
    """The interceptor of the module's agent (armed by each test)."""
    return LoseAnswers()


@pytest.fixture(scope="module")
def grpc_agent(losing: LoseAnswers) -> Iterator[EmbeddedPeer]:
    """An agent whose gRPC server loses the answers the interceptor is armed for."""
    with EmbeddedPeer(streaming=True, grpc_interceptors=(losing,)) as running:
        yield running


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
@pytest.mark.parametrize("lost", [1, 2])
async def test_a_lost_grpc_answer_is_found_and_makes_one_task(
    grpc_agent: EmbeddedPeer, losing: LoseAnswers, streaming: bool, lost: int
) -> None:
    """The agent made the task, its answer lost (UNAVAILABLE): found, not resent; one task."""
    losing.mode, losing.armed, losing.sends, losing.lost = "lose", lost, 0, 0
    hook = Unknowns()
    before = grpc_agent.task_ids()
    client, http = await sdk_client(
        grpc_agent, "grpc", guard=Guard(sleep=lambda _: None, hooks=[hook]), streaming=streaming
    )
    try:
        events = [event async for event in client.send_message(send_request())]
    finally:
        await client.close()
        await http.aclose()
    made = new_tasks(grpc_agent, before)
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert sdk_state(events[-1]) == COMPLETED
    assert hook.resolutions == [Resolution.FOUND]
    assert (losing.sends, losing.lost) == (1, 1)
    losing.armed = 0


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_a_grpc_send_that_never_reached_the_agent_is_resent_under_a_contract(
    grpc_agent: EmbeddedPeer, losing: LoseAnswers, streaming: bool
) -> None:
    """UNAVAILABLE before the agent saw it, a listing contract: not there, resent; one task."""
    losing.mode, losing.armed, losing.sends, losing.lost = "drop", 1, 0, 0
    hook = Unknowns()
    before = grpc_agent.task_ids()
    contract = ExactlyOnce(listed_within=lambda peer: 0.0)
    guard = Guard(sleep=lambda _: None, hooks=[hook], exactly_once=contract)
    client, http = await sdk_client(grpc_agent, "grpc", guard=guard, streaming=streaming)
    try:
        events = [event async for event in client.send_message(send_request())]
    finally:
        losing.mode, losing.armed = "lose", 0
        await client.close()
        await http.aclose()
    made = new_tasks(grpc_agent, before)
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert sdk_state(events[-1]) == COMPLETED
    assert hook.resolutions == [Resolution.RESENT]
    assert (losing.sends, losing.lost) == (2, 1)


async def test_a_grpc_send_that_never_reached_the_agent_is_not_resent_without_a_word(
    grpc_agent: EmbeddedPeer, losing: LoseAnswers
) -> None:
    """The same drop without a contract: looked for, not resent, OutcomeUnknown; no task."""
    losing.mode, losing.armed, losing.sends, losing.lost = "drop", 1, 0, 0
    hook = Unknowns()
    before = grpc_agent.task_ids()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    client, http = await sdk_client(grpc_agent, "grpc", guard=guard, streaming=False)
    try:
        with pytest.raises(OutcomeUnknown):
            await client.send_message(send_request()).__anext__()
    finally:
        losing.mode, losing.armed = "lose", 0
        await client.close()
        await http.aclose()
    assert new_tasks(grpc_agent, before) == []
    assert losing.sends == 1
    assert hook.resolutions == [Resolution.UNRESOLVED]


async def test_a_grpc_deadline_on_a_slow_agent_waits_for_the_task_found(
    grpc_agent: EmbeddedPeer,
) -> None:
    """DEADLINE_EXCEEDED (a 0.5 s call timeout) on a working task: found, read until settled.

    The Guard's clock is fake; its second pause cancels the task (the agent's "slow" task ends
    only so): the caller gets the CANCELED task, the one task the agent made.
    """
    hook = Unknowns()
    before = grpc_agent.task_ids()
    clock = FakeClock()
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        pauses.append(seconds)
        if len(pauses) == 2:
            (task_id,) = new_tasks(grpc_agent, before)
            task = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
            assert a2a_pb2.TaskState.Name(task.status.state) == CANCELED

    client, http = await sdk_client(
        grpc_agent,
        "grpc",
        guard=Guard(clock=clock, sleep=sleep, hooks=[hook]),
        streaming=False,
    )
    try:
        context = ClientCallContext(timeout=0.5)
        events = [
            event async for event in client.send_message(send_request("slow"), context=context)
        ]
        made = new_tasks(grpc_agent, before)
        assert len(made) == 1
        assert sdk_task_ids(events) == set(made)
        assert sdk_state(events[-1]) == CANCELED
        assert hook.resolutions == [Resolution.FOUND]
        assert pauses == [0.5, 1.0]
    finally:
        await client.close()
        await http.aclose()

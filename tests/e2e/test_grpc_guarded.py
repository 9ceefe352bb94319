"""GuardInterceptor against the real a2a-sdk peer's gRPC binding on 127.0.0.1.

The stubs and messages are a2a-sdk's own (``a2a.types.a2a_pb2_grpc``, ``a2a_pb2``); the channel
is a ``grpc.aio`` channel of this test's loop, guarded by a Guard on a fake clock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc

from a2a_client_errors import (
    CallFailed,
    DegradeNeeded,
    GiveUp,
    Guard,
    ReconcileNeeded,
)
from a2a_client_errors.integrations.grpc import GuardInterceptor
from a2a_client_errors.testing import FakeClock, RecordingHook

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0
"""The gRPC timeout of every call (each attempt gets what is left of it)."""
METADATA = (("a2a-version", "1.0"),)


@dataclass
class Guarded:
    """An A2A stub on a guarded channel to the peer, and what the Guard decided."""

    stub: Any
    hook: RecordingHook
    clock: FakeClock
    target: str


@pytest.fixture
async def guarded(peer: EmbeddedPeer) -> AsyncIterator[Guarded]:
    """A guarded gRPC channel to the streaming peer, closed after the test."""
    clock = FakeClock()
    hook = RecordingHook()
    guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 0.5, hooks=[hook])
    channel = grpc.aio.insecure_channel(
        peer.grpc_target, interceptors=GuardInterceptor(guard).interceptors
    )
    try:
        yield Guarded(a2a_pb2_grpc.A2AServiceStub(channel), hook, clock, peer.grpc_target)
    finally:
        await channel.close()


def send_request(text: str) -> Any:
    """A SendMessageRequest whose first text part is ``text`` (the peer acts on it)."""
    message = a2a_pb2.Message(
        message_id=f"msg-{uuid.uuid4()}", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def collect(call: Any, into: list[Any]) -> None:
    """Append every message of a stream to ``into`` (kept if the stream raises)."""
    async for response in call:
        into.append(response)  # noqa: PERF401 (a comprehension would lose them on an error)


async def test_get_task_of_an_unknown_task_reconciles(guarded: Guarded) -> None:
    """TASK_NOT_FOUND (NOT_FOUND with its ErrorInfo): reconcile, after one attempt."""
    request = a2a_pb2.GetTaskRequest(id=f"task-never-issued-{uuid.uuid4()}")

    with pytest.raises(ReconcileNeeded) as raised:
        await guarded.stub.GetTask(request, timeout=TIMEOUT, metadata=METADATA)

    failure = raised.value
    assert failure.reason == "TASK_NOT_FOUND"
    assert failure.attempts == 1
    assert failure.decision.operation == "GetTask"
    assert failure.decision.error is not None
    assert failure.decision.error.source.value == "error_info"
    assert isinstance(failure.__cause__, grpc.aio.AioRpcError)
    assert failure.__cause__.code() is grpc.StatusCode.NOT_FOUND
    assert [e.peer for e in guarded.hook.decisions] == [guarded.target]


async def test_cancel_of_a_completed_task_reconciles(guarded: Guarded) -> None:
    """TASK_NOT_CANCELABLE is told from the other FAILED_PRECONDITION errors by its ErrorInfo."""
    sent = await guarded.stub.SendMessage(send_request("hello"), timeout=TIMEOUT, metadata=METADATA)
    assert sent.task.status.state == a2a_pb2.TASK_STATE_COMPLETED

    with pytest.raises(ReconcileNeeded) as raised:
        await guarded.stub.CancelTask(
            a2a_pb2.CancelTaskRequest(id=sent.task.id), timeout=TIMEOUT, metadata=METADATA
        )

    failure = raised.value
    assert failure.reason == "TASK_NOT_CANCELABLE"
    assert failure.attempts == 1
    assert failure.decision.error is not None
    assert failure.decision.error.source.value == "error_info"
    assert isinstance(failure.__cause__, grpc.aio.AioRpcError)
    assert failure.__cause__.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert guarded.hook.actions == ["ok", "reconcile"]


async def test_a_failed_task_is_a_result(guarded: Guarded) -> None:
    """SendMessage 'fail' succeeds: the FAILED task is the answer, not an error to retry."""
    response = await guarded.stub.SendMessage(
        send_request("fail"), timeout=TIMEOUT, metadata=METADATA
    )

    assert response.task.status.state == a2a_pb2.TASK_STATE_FAILED
    assert guarded.hook.actions == ["ok"]
    assert guarded.clock.sleeps == []


async def test_a_stream_runs_to_its_end(guarded: Guarded) -> None:
    """A stream that ends well is relayed whole, its task COMPLETED last."""
    events = [
        event
        async for event in guarded.stub.SendStreamingMessage(
            send_request("hello"), timeout=TIMEOUT, metadata=METADATA
        )
    ]

    assert events
    last = events[-1]
    state = last.task.status.state if last.HasField("task") else last.status_update.status.state
    assert state == a2a_pb2.TASK_STATE_COMPLETED
    assert guarded.hook.actions == ["ok"]


async def test_a_stream_error_after_events_is_raised_after_them(guarded: Guarded) -> None:
    """'stream-error': the events come, then the UNKNOWN status as a CallFailed, not resent."""
    events: list[Any] = []

    with pytest.raises(CallFailed) as raised:
        await collect(
            guarded.stub.SendStreamingMessage(
                send_request("stream-error"), timeout=TIMEOUT, metadata=METADATA
            ),
            events,
        )

    assert events, "the events before the error are yielded"
    failure = raised.value
    assert isinstance(failure.__cause__, grpc.aio.AioRpcError)
    assert failure.__cause__.code() is grpc.StatusCode.UNKNOWN
    assert failure.decision.operation == "SendStreamingMessage"
    assert failure.decision.give_up is GiveUp.STREAM_STARTED  # UNKNOWN would be retried
    assert guarded.hook.actions == ["ok", "retry"]  # opened once; the error judged, not resent
    assert guarded.clock.sleeps == []


async def test_subscribing_to_a_completed_task_degrades(guarded: Guarded) -> None:
    """SubscribeToTask on a terminal task: UNSUPPORTED_OPERATION before any event."""
    sent = await guarded.stub.SendMessage(send_request("hello"), timeout=TIMEOUT, metadata=METADATA)

    events: list[Any] = []

    with pytest.raises(DegradeNeeded) as raised:
        await collect(
            guarded.stub.SubscribeToTask(
                a2a_pb2.SubscribeToTaskRequest(id=sent.task.id), timeout=TIMEOUT, metadata=METADATA
            ),
            events,
        )

    assert events == []
    assert raised.value.reason == "UNSUPPORTED_OPERATION"
    assert raised.value.attempts == 1
    assert isinstance(raised.value.__cause__, grpc.aio.AioRpcError)


async def test_a_journaled_send_over_grpc_is_never_sent_twice(
    peer: EmbeddedPeer, tmp_path: Any
) -> None:
    """Under a journal, a SendMessage over gRPC is recorded and closed with its task.

    The interceptor cannot read a task back (it has no look-up): the second send of the
    same messageId is `AlreadySent`, naming the task, with nothing sent.
    """
    from a2a_client_errors.journal import AlreadySent, SqliteJournal, State

    journal = SqliteJournal(tmp_path / "sends.db")
    clock = FakeClock()
    guard = Guard(clock=clock.now, sleep=clock.sleep, journal=journal)
    channel = grpc.aio.insecure_channel(
        peer.grpc_target, interceptors=GuardInterceptor(guard).interceptors
    )
    try:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        request = send_request("hello")
        response = await stub.SendMessage(request, timeout=TIMEOUT, metadata=METADATA)
        record = journal.get(request.message.message_id)
        assert record is not None
        assert record.state is State.TASK
        assert record.made == response.task.id
        assert record.peer.startswith("grpc://")
        assert record.peer.endswith("/SendMessage")
        with pytest.raises(AlreadySent) as raised:
            await stub.SendMessage(request, timeout=TIMEOUT, metadata=METADATA)
        assert raised.value.journal_record.made == response.task.id
        streamed: list[Any] = []
        stream_request = send_request("hello")
        await collect(
            stub.SendStreamingMessage(stream_request, timeout=TIMEOUT, metadata=METADATA),
            streamed,
        )
        stream_record = journal.get(stream_request.message.message_id)
        assert stream_record is not None
        assert stream_record.state is State.TASK
    finally:
        await channel.close()

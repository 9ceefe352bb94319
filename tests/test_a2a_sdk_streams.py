"""Guarded a2a-sdk streams against a scripted client: resumption is bounded, closes judged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import (
    CallFailed,
    GiveUp,
    Guard,
    Reason,
    ReportNeeded,
    RetryExhausted,
)
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing import RecordingHook

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

# guard_client over a2a-sdk 1.x clients and types.
pytestmark = pytest.mark.a2a_sdk("1")

WORKING = a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_WORKING)


class Scripted:
    """An a2a-sdk client stand-in whose streams close while the task still works."""

    def __init__(self) -> None:
        self.subscribed = 0

    async def send_message(self, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        """One WORKING task event, then the stream closes."""
        yield a2a_pb2.StreamResponse(task=a2a_pb2.Task(id="t-1", status=WORKING))

    async def subscribe(self, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        """One WORKING status update, then the stream closes again."""
        self.subscribed += 1
        update = a2a_pb2.TaskStatusUpdateEvent(task_id=request.id, status=WORKING)
        yield a2a_pb2.StreamResponse(status_update=update)

    async def close(self) -> None:
        """Nothing to close."""


class Anonymous(Scripted):
    """A stream whose only event names no task."""

    async def send_message(self, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        """An artifact update without a task id, then the stream closes."""
        yield a2a_pb2.StreamResponse(artifact_update=a2a_pb2.TaskArtifactUpdateEvent())


def _request() -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hi")])
    )


async def test_resumption_is_bounded_then_an_interruption_is_raised() -> None:
    """Closed early again and again: resumed max_reconnects times, then RetryExhausted."""
    scripted = Scripted()
    client = guard_client(scripted, Guard(sleep=lambda _: None), max_reconnects=2)
    seen: list[Any] = []

    async def read() -> None:
        async for event in client.send_message(_request()):
            seen.append(event)  # noqa: PERF401 (the events before the failure are the point)

    with pytest.raises(RetryExhausted) as failed:
        await read()
    assert scripted.subscribed == 2
    assert len(seen) == 3  # the first event, and one per resumption
    assert failed.value.decision.give_up is GiveUp.STREAM_STARTED


async def test_a_stream_that_names_no_task_cannot_be_resumed() -> None:
    """Closed early with no task id known: nothing to resume, an interruption at once."""
    anonymous = Anonymous()
    client = guard_client(anonymous, Guard(sleep=lambda _: None))
    with pytest.raises(RetryExhausted):
        async for _ in client.send_message(_request()):
            pass
    assert anonymous.subscribed == 0


class Silent(Scripted):
    """A stream that ends without one event; list_tasks holds the task it made, or nothing.

    As a stream whose events the SDK could not read, and dropped, looks to the caller.
    """

    def __init__(self, *, made: bool) -> None:
        super().__init__()
        self.made = made
        self.sent: list[str] = []

    async def send_message(self, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        """Nothing at all."""
        self.sent.append(request.message.message_id)
        for _ in ():
            yield None

    async def list_tasks(self, request: Any, *, context: Any = None) -> Any:
        """The task the send made, its history holding the message, if it made one."""
        tasks = []
        if self.made:
            done = a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_COMPLETED)
            history = [a2a_pb2.Message(message_id=self.sent[0], role=a2a_pb2.ROLE_USER)]
            tasks.append(a2a_pb2.Task(id="t-9", status=done, history=history))
        return a2a_pb2.ListTasksResponse(tasks=tasks)


async def test_a_stream_with_no_event_is_never_a_silent_success() -> None:
    """No event and no task to find: INVALID_AGENT_RESPONSE, nothing resent."""
    silent = Silent(made=False)
    client = guard_client(silent, Guard(sleep=lambda _: None), handlers=None)
    with pytest.raises(ReportNeeded) as raised:
        async for _ in client.send_message(_request()):
            pass
    assert raised.value.reason is Reason.INVALID_AGENT_RESPONSE
    assert raised.value.maybe_processed
    assert len(silent.sent) == 1


async def test_a_stream_with_no_event_gives_the_task_the_message_made() -> None:
    """The agent ran the task though no event could be read: the look-up hands it over."""
    silent = Silent(made=True)
    recorder = RecordingHook()
    client = guard_client(silent, Guard(sleep=lambda _: None, hooks=[recorder]))
    events = [event async for event in client.send_message(_request())]
    assert [event.task.id for event in events] == ["t-9"]
    assert recorder.resolutions == ["found"]
    assert len(silent.sent) == 1


class Unparsable(Scripted):
    """a2a-sdk fails to read the peer's answer: a ValueError raised in its own code."""

    async def send_message(self, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        """The SDK's parser raises on a timestamp without a zone."""
        from google.protobuf import timestamp_pb2

        timestamp_pb2.Timestamp().FromJsonString("2026-12-01T10:00:00")  # no zone: ValueError
        yield None

    async def get_task(self, request: Any, *, context: Any = None) -> Any:
        """The same failure on a unary answer."""
        from google.protobuf import timestamp_pb2

        timestamp_pb2.Timestamp().FromJsonString("2026-12-01T10:00:00")
        return None


class CallersBug(Scripted):
    """The caller's own code (an interceptor, say) raises a ValueError: their bug."""

    async def get_task(self, request: Any, *, context: Any = None) -> Any:
        """A bug of the caller's, not the peer's answer."""
        raise ValueError("a bug in the caller's own code")


async def test_an_answer_the_sdk_cannot_read_is_the_peers_broken_answer() -> None:
    """A ValueError raised inside the SDK's reading: INVALID_AGENT_RESPONSE, with its words."""
    client = guard_client(Unparsable(), Guard(sleep=lambda _: None), handlers=None)
    with pytest.raises(ReportNeeded) as unary:
        await client.get_task(a2a_pb2.GetTaskRequest(id="t-1"))
    assert unary.value.reason is Reason.INVALID_AGENT_RESPONSE
    assert unary.value.error is not None
    assert "could not read the answer: ValueError" in unary.value.error.message
    with pytest.raises(CallFailed) as stream:
        async for _ in client.send_message(_request()):
            pass
    assert stream.value.reason is Reason.INVALID_AGENT_RESPONSE


async def test_the_callers_own_value_error_still_propagates() -> None:
    """Raised outside the SDK's reading, a ValueError is the caller's bug, as it is."""
    client = guard_client(CallersBug(), Guard(sleep=lambda _: None), handlers=None)
    with pytest.raises(ValueError, match="caller's own code"):
        await client.get_task(a2a_pb2.GetTaskRequest(id="t-1"))

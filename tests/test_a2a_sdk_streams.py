"""Guarded a2a-sdk streams against a scripted client: resumption is bounded, closes judged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import GiveUp, Guard, RetryExhausted
from a2a_client_errors.integrations.a2a_sdk import guard_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

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

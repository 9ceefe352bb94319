"""The cancel race, reproduced deterministically against a real a2a-sdk peer.

The peer's ``"complete-on-cancel"`` task works until a cancel request reaches the executor's
``cancel()``; the executor then completes the task (COMPLETED, written to the task store)
instead of canceling it and refuses the cancel with TASK_NOT_CANCELABLE. No timing is involved:
the completion is ordered after the arrival of the cancel and before its answer.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import ReconcileNeeded
from a2a_client_errors.integrations.a2a_sdk._handlers import LOST_RACE
from tests.e2e.sdk import BINDINGS, sdk_client

if TYPE_CHECKING:
    import httpx

    from a2a_client_errors.integrations.a2a_sdk import GuardedClient
    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0
"""Seconds each whole scenario may take (it takes milliseconds)."""


async def _client(
    peer: EmbeddedPeer, binding: str, *, raw: bool = False
) -> tuple[GuardedClient, httpx.AsyncClient]:
    return await sdk_client(peer, binding, streaming=False, raw=raw, timeout=TIMEOUT)


async def _working_task(client: GuardedClient) -> str:
    """Send "complete-on-cancel" without waiting for the task to end; return its id."""
    request = a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id="", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="complete-on-cancel")]
        ),
        configuration=a2a_pb2.SendMessageConfiguration(return_immediately=True),
    )
    events = [event async for event in client.send_message(request)]
    assert events
    first = events[0]
    assert first.WhichOneof("payload") == "task"
    assert first.task.status.state in (
        a2a_pb2.TASK_STATE_SUBMITTED,
        a2a_pb2.TASK_STATE_WORKING,
    )
    return str(first.task.id)


async def _cancel(client: GuardedClient) -> tuple[str, Any]:
    task_id = await _working_task(client)
    try:
        outcome: Any = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
    except ReconcileNeeded as exc:
        outcome = exc
    # The task stays COMPLETED for every later reader.
    stored = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
    assert stored.status.state == a2a_pb2.TASK_STATE_COMPLETED
    return task_id, outcome


async def _race(peer: EmbeddedPeer, binding: str, *, raw: bool) -> tuple[str, Any]:
    """Start the task, cancel it; return the task id and what cancel_task gave (or raised)."""
    client, http = await _client(peer, binding, raw=raw)
    try:
        return await asyncio.wait_for(_cancel(client), timeout=TIMEOUT)
    finally:
        await client.close()
        await http.aclose()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_lost_cancel_race_returns_the_completed_task(
    peer: EmbeddedPeer, binding: str
) -> None:
    """The default handlers turn TASK_NOT_CANCELABLE into the COMPLETED task, marked."""
    task_id, task = await _race(peer, binding, raw=False)
    assert not isinstance(task, ReconcileNeeded)
    assert task.id == task_id
    assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    marker = dict(task.metadata)["a2a_client_errors"]
    assert dict(marker) == LOST_RACE["a2a_client_errors"]
    assert [artifact.name for artifact in task.artifacts] == ["result"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_lost_cancel_race_without_handlers_is_reconcile(
    peer: EmbeddedPeer, binding: str
) -> None:
    """Without handlers, the refused cancel raises ReconcileNeeded(TASK_NOT_CANCELABLE)."""
    _task_id, outcome = await _race(peer, binding, raw=True)
    assert isinstance(outcome, ReconcileNeeded)
    assert outcome.reason == "TASK_NOT_CANCELABLE"
    assert outcome.attempts == 1
    assert outcome.__cause__ is not None
    assert type(outcome.__cause__).__module__.startswith("a2a.")

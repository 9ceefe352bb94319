"""Cancel a task that has already completed: the cancel lost the race, and that is no error.

An embedded a2a-sdk peer on 127.0.0.1 completes a task; the guarded a2a-sdk client then asks to
cancel it. The peer refuses with TASK_NOT_CANCELABLE; the default decision handlers read the
task with GetTask and return it, its metadata marked
``{"a2a_client_errors": {"cancel": "lost_race"}}``, so nobody takes it for a successful cancel.

Run it with ``python examples/cancel_race.py``.
"""

from __future__ import annotations

import asyncio

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import LOST_RACE, guard_client
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.testing.peer import EmbeddedPeer


async def cancel_a_completed_task(peer: EmbeddedPeer) -> None:
    """Complete a task, cancel it, and check what the guarded client returns."""
    recorder = RecordingHook()
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
    config = ClientConfig(
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    guard = Guard(sleep=lambda _: None, hooks=[recorder])
    client = guard_client(ClientFactory(config).create(peer.agent_card), guard)
    try:
        message = a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")])
        events = [e async for e in client.send_message(a2a_pb2.SendMessageRequest(message=message))]
        task_id = events[0].task.id
        print(f"sent 'hello': task {task_id} ({len(events)} events)")

        task = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
    finally:
        await client.close()
        await http.aclose()

    state = a2a_pb2.TaskState.Name(task.status.state)
    marker = dict(task.metadata["a2a_client_errors"])
    refused = next(e.decision for e in recorder.decisions if e.operation == "CancelTask")
    print(f"CancelTask refused with {refused.reason} -> action {refused.action.value}")
    print(f"cancel_task returned task {task.id} in {state}, metadata {marker}")
    assert task.id == task_id
    assert state == "TASK_STATE_COMPLETED"
    assert refused.reason == "TASK_NOT_CANCELABLE"
    assert {"a2a_client_errors": marker} == LOST_RACE


def main() -> None:
    """Start a peer, run the flow, stop the peer."""
    with EmbeddedPeer() as peer:
        asyncio.run(cancel_a_completed_task(peer))
    print("ok: a lost cancel race came back as the terminal task, not as an exception")


if __name__ == "__main__":
    main()
